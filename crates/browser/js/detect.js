// detect.js — evaluated in the live page after load (Runtime.evaluate of `(SRC)(OPTS)` with
// returnByValue, or Runtime.callFunctionOn). Returns a plain JSON-able object:
//   { url, frames, charts: [ {index, library, type, frame, anchor, selector, box:{x,y,width,height},
//        visible, title, labels, series:[{name,type,values,n}], caption, heading, animating,
//        truncated } ], warnings: [...] }
// Boxes are in CSS pixels relative to the TOP document (page coordinates, scroll included), ready
// for Page.captureScreenshot { clip: {x,y,width,height,scale:1}, captureBeyondViewport: true }.
// Same-origin iframes are searched too (their boxes are offset by the iframe's box).
// opts: { maxSeries, maxPoints, maxLabels, maxString, staticHtml: {frameUrl: html}, minD3Marks }
(function detectCharts(opts) {
  'use strict';
  opts = opts || {};
  var MAX_SERIES = opts.maxSeries || 12, MAX_POINTS = opts.maxPoints || 100,
      MAX_LABELS = opts.maxLabels || 100, MAX_STR = opts.maxString || 200,
      MIN_D3_MARKS = opts.minD3Marks || 3, MIN_SIDE = opts.minSide || 40;
  var out = { url: String(location.href).slice(0, 500), frames: 0, charts: [], warnings: [] };
  // What the page's code looked up so far was looked up at load (hooks.js); not what
  // this script looks up.
  try { if (window.__tvirHooks) window.__tvirHooks.frozen = true; } catch (e) {}
  var seen = [];   // elements already claimed by a chart (any frame)
  var elements = [], chartHosts = [];   // each chart's element and frame host, by index

  function str(v) {
    if (v == null) return null;
    if (Array.isArray(v)) v = v.join(' ');
    if (typeof v === 'object') { if ('text' in v) return str(v.text); try { v = JSON.stringify(v); } catch (e) { v = String(v); } }
    v = String(v).replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim();
    return v ? v.slice(0, MAX_STR) : null;
  }
  function num(v) {
    if (v == null) return null;
    if (typeof v === 'number') return isFinite(v) ? v : null;
    if (typeof v === 'string' && v.trim() !== '' && !isNaN(+v)) return +v;
    if (v instanceof Date) return v.getTime();
    return null;
  }
  // A data point reduced to a number, [x, y] pair, or short string.
  function point(p) {
    if (p == null) return null;
    if (typeof p === 'number' || typeof p === 'string') { var n = num(p); return n != null ? n : str(p); }
    if (Array.isArray(p)) return p.slice(0, 4).map(function (q) { var n = num(q); return n != null ? n : str(q); });
    if (typeof p === 'object') {
      if ('value' in p) return point(p.value);
      if ('y' in p && 'x' in p) return [point(p.x), point(p.y)];
      if ('y' in p) return point(p.y);
      if ('r' in p) return point(p.r);
    }
    return str(p);
  }
  function list(arr, max, f) {
    if (!arr || typeof arr.length !== 'number') return { values: [], n: 0 };
    var n = arr.length, vals = [];
    for (var i = 0; i < Math.min(n, max); i++) vals.push(f ? f(arr[i], i) : arr[i]);
    return { values: vals, n: n };
  }
  function series(name, type, data, f) {
    var l = list(data, MAX_POINTS, f || point);
    return { name: str(name), type: type ? String(type) : null, values: l.values, n: l.n };
  }
  function labelsOf(arr) { var l = list(arr, MAX_LABELS, function (x) { return str(x); }); return l.values; }

  function cssPath(el) {
    var doc = el.ownerDocument;
    if (el.id && doc.querySelectorAll('#' + cssEscape(el.id)).length === 1) return '#' + cssEscape(el.id);
    var parts = [];
    while (el && el.nodeType === 1 && el !== doc.documentElement) {
      if (el.id && doc.querySelectorAll('#' + cssEscape(el.id)).length === 1) { parts.unshift('#' + cssEscape(el.id)); break; }
      var tag = el.localName, i = 1, s = el;
      while ((s = s.previousElementSibling)) if (s.localName === tag) i++;
      parts.unshift(tag + ':nth-of-type(' + i + ')');
      el = el.parentElement;
    }
    return parts.join(' > ');
  }
  function cssEscape(s) { return (window.CSS && CSS.escape) ? CSS.escape(s) : String(s).replace(/[^\w-]/g, '\\$&'); }

  function boxOf(el, off) {
    var r = el.getBoundingClientRect(), w = el.ownerDocument.defaultView;
    var topWin = window;
    return {
      x: Math.round((r.left + off.x + topWin.scrollX) * 100) / 100,
      y: Math.round((r.top + off.y + topWin.scrollY) * 100) / 100,
      width: Math.round(r.width * 100) / 100, height: Math.round(r.height * 100) / 100
    };
  }
  function isVisible(el, box) {
    if (box.width < MIN_SIDE || box.height < MIN_SIDE) return false;
    var w = el.ownerDocument.defaultView, e = el;
    while (e && e.nodeType === 1) {
      var cs = w.getComputedStyle(e);
      // Transparency is no reason to skip a chart: cards revealed on scroll start at
      // opacity 0 (capture.js waits for the reveal, or forces it).
      if (cs.display === 'none' || cs.visibility === 'hidden') return false;
      e = e.parentElement;
    }
    return true;
  }
  // Caption near the chart: <figcaption> of the enclosing <figure>, else the first short
  // following text block that looks like a caption (the visible title: headingOf below).
  var CAP = /^\s*(figure|fig\.|chart|graph|exhibit|图|圖|表|图表)\s*[\dA-Za-z一二三四五六七八九十]*/i;
  function context(el) {
    var res = { caption: null };
    var fig = el.closest && el.closest('figure');
    if (fig) { var fc = fig.querySelector('figcaption'); if (fc) { res.caption = str(fc.textContent); res.source = res.caption ? 'figcaption' : null; } }
    var e = el;
    for (var up = 0; up < 4 && e && !res.caption; up++, e = e.parentElement) {
      var s = e.nextElementSibling;
      for (var k = 0; k < 2 && s && !res.caption; k++, s = s.nextElementSibling) {
        var t = (s.textContent || '').trim();
        if (t && t.length < 400 && CAP.test(t)) { res.caption = str(t); res.source = 'caption line'; }
      }
    }
    return res;
  }
  function claimed(el) { for (var i = 0; i < seen.length; i++) if (seen[i] === el || seen[i].contains(el) || el.contains(seen[i])) return true; return false; }

  // The chart's place in the document the suite served: `data-tvir-at` of the element or its
  // nearest ancestor in the TOP document (for a chart inside a frame: of the frame's host
  // element there, an <iframe>/<embed>/<object>).
  function anchorOf(el) {
    var a = el && el.closest && el.closest('[data-tvir-at]');
    if (!a) return null;
    var n = parseInt(a.getAttribute('data-tvir-at'), 10);
    return isFinite(n) && n >= 0 ? n : null;
  }
  function push(frame, off, el, lib, info, host, topHost) {
    if (!el || claimed(el)) return;
    seen.push(el);
    elements.push(el); chartHosts.push(topHost || host || null);
    if (topHost && hosts.indexOf(topHost) < 0) hosts.push(topHost);
    var box = boxOf(el, off), ctx = context(el);
    if (host && !ctx.caption) { var hc = context(host); ctx.caption = hc.caption; ctx.source = hc.source; }
    var c = {
      index: out.charts.length, library: lib, type: info.type || null, frame: frame,
      anchor: anchorOf(topHost || el),
      selector: cssPath(el), box: box, visible: isVisible(el, box),
      title: str(info.title), labels: info.labels || [], series: (info.series || []).slice(0, MAX_SERIES),
      seriesCount: (info.series || []).length, caption: ctx.caption, captionSource: ctx.caption ? ctx.source || 'caption line' : null, heading: null,
      animating: !!info.animating, dataUrls: info.dataUrls || [], noData: !!info.noData,
      dataMarks: info.dataMarks || []
    };
    c.truncated = c.seriesCount > MAX_SERIES || c.series.some(function (s) { return s.n > s.values.length; }) ||
                  (info.labelCount || 0) > c.labels.length;
    out.charts.push(c);
  }

  function scan(win, frame, off, host, topHost) {
    var doc = win.document; out.frames++;
    var H = win.__tvirHooks || null;

    // ---- Chart.js (2.x: Chart.instances object; 3.x/4.x: Chart.instances object keyed by id)
    try {
      var Chart = win.Chart;
      if (Chart && Chart.instances) {
        var inst = Chart.instances, keys = Object.keys(inst);
        keys.forEach(function (k) {
          var ch = inst[k]; if (!ch || !ch.canvas) return;
          var cfg = ch.config || {}, data = ch.data || cfg.data || {}, o = ch.options || {};
          var title = (o.plugins && o.plugins.title && o.plugins.title.display !== false && o.plugins.title.text) ||
                      (o.title && o.title.text) || null;
          var ds = (data.datasets || []).map(function (d) { return series(d.label, d.type || cfg.type, d.data); });
          var anim = false; try { anim = !!(Chart.animator && Chart.animator._running) || !!ch.animating; } catch (e) {}
          push(frame, off, ch.canvas, 'chartjs', { type: cfg.type || (ch.config && ch.config._config && ch.config._config.type),
            title: title, labels: labelsOf(data.labels), labelCount: (data.labels || []).length, series: ds, animating: anim }, host, topHost);
        });
      }
    } catch (e) { out.warnings.push('chartjs: ' + e.message); }

    // ---- ECharts: instances carry the _echarts_instance_ attribute on their DOM
    try {
      var ec = win.echarts;
      if (ec && ec.getInstanceByDom) {
        doc.querySelectorAll('[_echarts_instance_]').forEach(function (el) {
          var ins = ec.getInstanceByDom(el); if (!ins || (ins.isDisposed && ins.isDisposed())) return;
          var o = ins.getOption() || {};
          var t = o.title && (Array.isArray(o.title) ? o.title[0] : o.title);
          var axes = [].concat(o.xAxis || [], o.yAxis || [], o.angleAxis || [], o.radiusAxis || [], o.singleAxis || []);
          var cat = null;
          axes.forEach(function (a) { if (!cat && a && a.data && a.data.length) cat = a.data.map(function (d) { return d && typeof d === 'object' ? d.value : d; }); });
          var ss = (o.series || []).map(function (s) {
            var d = s.data || (s.encode ? null : null);
            if (!cat && d && d.length && d[0] && typeof d[0] === 'object' && !Array.isArray(d[0]) && 'name' in d[0]) cat = d.map(function (p) { return p.name; });
            return series(s.name, s.type, d);
          });
          if (!ss.length && o.dataset) {
            var dsrc = (Array.isArray(o.dataset) ? o.dataset[0] : o.dataset).source;
            if (dsrc) ss.push(series('dataset', 'dataset', dsrc));
          }
          var types = {}; (o.series || []).forEach(function (s) { types[s.type] = 1; });
          push(frame, off, el, 'echarts', { type: Object.keys(types).join('+') || null, title: t && t.text,
            labels: labelsOf(cat), labelCount: cat ? cat.length : 0, series: ss }, host, topHost);
        });
      }
    } catch (e) { out.warnings.push('echarts: ' + e.message); }

    // ---- Plotly: graph divs have class js-plotly-plot and carry data/_fullData/layout
    try {
      doc.querySelectorAll('.js-plotly-plot').forEach(function (gd) {
        var data = gd._fullData || gd.data || [], layout = gd._fullLayout || gd.layout || {};
        var title = layout.title && (typeof layout.title === 'string' ? layout.title : layout.title.text);
        var labels = null;
        var ss = data.filter(function (t) { return t.visible !== false; }).map(function (t) {
          if (t.labels && t.values) { labels = labels || t.labels; return series(t.name, t.type, t.values); }
          if (!labels && t.x && t.x.length && t.orientation !== 'h') labels = t.x;
          var ys = t.y || t.z || t.values || t.r || [];
          if (t.orientation === 'h' && t.x) { ys = t.x; if (!labels && t.y) labels = t.y; }
          return series(t.name, t.type, ys);
        });
        var types = {}; data.forEach(function (t) { types[t.type] = 1; });
        push(frame, off, gd, 'plotly', { type: Object.keys(types).join('+') || null, title: title,
          labels: labelsOf(labels), labelCount: labels ? labels.length : 0, series: ss }, host, topHost);
      });
    } catch (e) { out.warnings.push('plotly: ' + e.message); }

    // ---- Highcharts: Highcharts.charts (array with holes for destroyed charts)
    try {
      var HC = win.Highcharts;
      if (HC && HC.charts) {
        HC.charts.forEach(function (ch) {
          if (!ch || !ch.renderTo) return;
          var title = (ch.title && ch.title.textStr) || (ch.options && ch.options.title && ch.options.title.text);
          var xa = ch.xAxis && ch.xAxis[0], cats = xa && xa.categories;
          var ss = (ch.series || []).filter(function (s) { return !(s.options && s.options.isInternal); }).map(function (s) {
            var d = (s.options && s.options.data) || [];
            if (!cats && d.length && d[0] && typeof d[0] === 'object' && !Array.isArray(d[0]) && 'name' in d[0]) cats = d.map(function (p) { return p.name; });
            return series(s.name, s.type, d);
          });
          push(frame, off, ch.renderTo, 'highcharts', { type: ch.options && ch.options.chart && ch.options.chart.type,
            title: title, labels: labelsOf(cats), labelCount: cats ? cats.length : 0, series: ss }, host, topHost);
        });
      }
    } catch (e) { out.warnings.push('highcharts: ' + e.message); }

    // ---- ApexCharts: Apex._chartInstances (only charts with chart.id) + hook list + DOM fallback
    try {
      var apexList = [];
      if (win.Apex && Array.isArray(win.Apex._chartInstances)) win.Apex._chartInstances.forEach(function (r) { if (r && r.chart) apexList.push(r.chart); });
      if (H && H.apex) H.apex.forEach(function (c) { if (apexList.indexOf(c) < 0) apexList.push(c); });
      apexList.forEach(function (ch) {
        var w = ch.w || {}, cfg = w.config || ch.opts || {}, g = w.globals || {};
        var el = ch.el; if (!el || !el.isConnected) return;
        var cats = (g.categoryLabels && g.categoryLabels.length) ? g.categoryLabels :
                   (cfg.xaxis && cfg.xaxis.categories && cfg.xaxis.categories.length) ? cfg.xaxis.categories :
                   (cfg.labels && cfg.labels.length) ? cfg.labels : null;
        var ss = (cfg.series || []).map(function (s, i) {
          if (typeof s === 'number') return series((cfg.labels || [])[i], cfg.chart && cfg.chart.type, [s]);
          return series(s.name, s.type || (cfg.chart && cfg.chart.type), s.data);
        });
        if (ss.length && typeof (cfg.series || [])[0] === 'number') ss = [series(null, cfg.chart && cfg.chart.type, cfg.series)];
        push(frame, off, el, 'apexcharts', { type: cfg.chart && cfg.chart.type, title: cfg.title && cfg.title.text,
          labels: labelsOf(cats), labelCount: cats ? cats.length : 0, series: ss, animating: !!(g && g.animationEnded === false) }, host, topHost);
      });
      doc.querySelectorAll('.apexcharts-canvas').forEach(function (c) {
        var el = c.parentElement || c; if (claimed(el)) return;
        var t = c.querySelector('.apexcharts-title-text');
        push(frame, off, el, 'apexcharts', { type: null, title: t && t.textContent, series: [] }, host, topHost);
        out.warnings.push('apexcharts instance not reachable (no chart.id and no hook): data unknown for ' + cssPath(el));
      });
    } catch (e) { out.warnings.push('apexcharts: ' + e.message); }

    // ---- Vega / Vega-Lite: views recorded by hooks.js; DOM fallback on .vega-embed / .marks
    // The marks of a live view that draw from data, with what each drew and the data files
    // it reads: for every mark of the scenegraph that is not a guide (axis, legend, title)
    // nor the view's own frame, the number of items it drew (summed over the groups of a
    // facet) and the files upstream of it in the dataflow. Upstream means the operators
    // that feed its rows (a dataset's source, the datasets it derives from, the datasets a
    // lookup joins, the facet a group's marks split), never a scale or signal it merely
    // reads: a rule from inline rows on a scale sized by the file does not read the file.
    // hooks.js marks the operator that receives a file's rows with its address.
    function vegaDataMarks(view, base) {
      var root = view.scenegraph && view.scenegraph().root;
      if (!root) return [];
      var byKey = {}, list = [], seenOps = 0;
      function filesOf(op) {
        var found = [], visited = new Set(), stack = [op];
        while (stack.length && seenOps < 20000) {
          var o = stack.pop();
          if (!o || typeof o !== 'object' || visited.has(o)) continue;
          visited.add(o); seenOps++;
          var u = typeof o.__tvirUrl === 'string' ? o.__tvirUrl
            : (o._argval && typeof o._argval.url === 'string' ? o._argval.url : null); // a loader op (url from a signal)
          if (u) { try { u = new URL(u, base).href; } catch (e) {} if (found.indexOf(u) < 0) found.push(u); }
          [].concat(o.source || []).forEach(function (x) { stack.push(x); });
          if (o.parent && typeof o.parent.targets === 'function') stack.push(o.parent); // a facet's subflow: its facet
          // a lookup's table: the index it builds over the joined dataset
          (o._argops || []).forEach(function (a) { if (a && (a.name === 'index' || a.name === 'from')) stack.push(a.op); });
        }
        return found.sort();
      }
      function visit(mark, depth, path) {
        if (!mark || depth > 24 || list.length >= 60) return;
        var role = String(mark.role || '');
        if (/^(axis|legend|title)/.test(role)) return;
        var items = mark.items || [];
        if (role !== 'frame') {
          var files = filesOf(mark.source);
          var key = (mark.name || path) + '|' + files.join(' ');
          var rec = byKey[key];
          if (!rec) { rec = byKey[key] = { name: mark.name || null, type: mark.marktype || null, urls: files.slice(0, 10), items: 0 }; list.push(rec); }
          rec.items += items.length;
        }
        if (mark.marktype === 'group') {
          items.forEach(function (g) {
            (g && g.items || []).forEach(function (m, i) { visit(m, depth + 1, path + '/' + i); });
          });
        }
      }
      visit(root, 0, '');
      return list;
    }
    try {
      var vviews = [];
      if (H) {
        H.vegaEmbeds.forEach(function (r) { if (r.view) vviews.push({ view: r.view, el: r.el, spec: r.spec }); });
        H.vegaViews.forEach(function (r) { if (!vviews.some(function (x) { return x.view === r.view; })) vviews.push({ view: r.view, el: r.el }); });
      }
      vviews.forEach(function (r) {
        var el = r.el || (r.view.container && r.view.container()); if (!el || !el.isConnected) return;
        var title = null, ss = [], labels = null;
        if (r.spec && r.spec.title) title = r.spec.title;
        try {
          // input datasets of the runtime (vega-lite names them source_N / data_N); skip scenegraph
          // datasets ('root', 'marks', mark names), whose tuples carry a .mark back-reference.
          var names = Object.keys((r.view._runtime && r.view._runtime.data) || {});
          var src = names.filter(function (n) { return /^source_\d+$/.test(n); });
          (src.length ? src : names).forEach(function (name) {
            var vals; try { vals = r.view.data(name); } catch (e) { return; }
            if (!vals || !vals.length || (vals[0] && typeof vals[0] === 'object' && 'mark' in vals[0])) return;
            ss.push(series(name, 'dataset', vals, function (v) {
              if (!v || typeof v !== 'object') return point(v);
              var o = {}; Object.keys(v).slice(0, 6).forEach(function (k) { var x = v[k]; o[k] = (x && typeof x === 'object') ? str(x) : x; }); return o;
            }));
          });
        } catch (e) { out.warnings.push('vega state: ' + e.message); }
        // Data files the spec loads (`data: {url}` at any level): when the view holds no
        // row and the page's request for one was refused, the picture is an empty frame.
        var urls = [];
        (function walk(o, depth) {
          if (!o || typeof o !== 'object' || depth > 12 || urls.length >= 20) return;
          if (Array.isArray(o)) { o.forEach(function (x) { walk(x, depth + 1); }); return; }
          [].concat(o.data || []).forEach(function (d) {
            if (d && typeof d.url === 'string') { try { urls.push(new URL(d.url, doc.baseURI).href); } catch (e) {} }
          });
          Object.keys(o).forEach(function (k) { if (k !== 'data' && k !== 'datasets') walk(o[k], depth + 1); });
        })(r.spec, 0);
        var dataMarks = [];
        try { dataMarks = vegaDataMarks(r.view, doc.baseURI); } catch (e) { out.warnings.push('vega marks: ' + e.message); }
        if (!title) { var tt = el.querySelector('.role-title-text, .mark-text.role-title-text text'); if (tt) title = tt.textContent; }
        // The view's own drawing (title, axes and legends included), not the embed box
        // around it, which also holds vega-embed's action menu and the room made for it.
        var marks = el.querySelector('canvas.marks, svg.marks');
        push(frame, off, marks || el, 'vega', { type: r.spec && (r.spec.mark && (r.spec.mark.type || r.spec.mark)) || (r.spec && r.spec.$schema && /vega-lite/.test(r.spec.$schema) ? 'vega-lite' : null),
          title: title, labels: labelsOf(labels), series: ss, dataUrls: urls, noData: urls.length > 0 && !ss.length,
          dataMarks: dataMarks }, host, topHost);
      });
      doc.querySelectorAll('.vega-embed, canvas.marks, svg.marks').forEach(function (el) {
        var host = el.classList.contains('vega-embed') ? el : (el.closest('.vega-embed') || el);
        if (claimed(host)) return;
        if (!host.querySelector('canvas, svg') && !/^(canvas|svg)$/i.test(host.tagName)) return;
        var drawn = /^(canvas|svg)$/i.test(host.tagName) ? host : (host.querySelector('canvas.marks, svg.marks') || host);
        push(frame, off, drawn, 'vega', { title: (host.querySelector('.role-title-text') || {}).textContent, series: [] }, host, topHost);
        out.warnings.push('vega view not reachable (no hooks): data unknown for ' + cssPath(host));
      });
    } catch (e) { out.warnings.push('vega: ' + e.message); }

    // ---- Plain D3 (or other script-built) SVG. An <svg> counts as a chart when, after every
    // library above has claimed its own elements, it (a) is at least MIN_SIDE px each way and
    // (b) either carries D3-bound data (__data__) on >= MIN_D3_MARKS mark elements, or gained
    // >= 8 shape elements compared with the same <svg> in the original HTML source (matched by
    // id, else by document order among static <svg>s) — i.e. it was drawn by script.
    try {
      var SHAPES = 'rect,circle,ellipse,path,line,polyline,polygon,text';
      var staticCounts = null, html = opts.staticHtml && (opts.staticHtml[win.location.href] || opts.staticHtml['*']);
      if (html && win.DOMParser) {
        var sd = new win.DOMParser().parseFromString(html, 'text/html');
        staticCounts = { byId: {}, byOrder: [] };
        sd.querySelectorAll('svg').forEach(function (s) {
          if (s.parentElement && s.parentElement.closest('svg')) return;
          var n = s.querySelectorAll(SHAPES).length;
          if (s.id) staticCounts.byId[s.id] = n; staticCounts.byOrder.push(n);
        });
      }
      var order = 0, liveCount = 0;
      doc.querySelectorAll('svg').forEach(function (svg) { if (!(svg.parentElement && svg.parentElement.closest('svg'))) liveCount++; });
      doc.querySelectorAll('svg').forEach(function (svg) {
        if (svg.parentElement && svg.parentElement.closest('svg')) return;  // nested svg: part of outer
        var myOrder = order++;
        if (claimed(svg)) return;
        // An icon in a heading, a button or a link is no chart.
        if (svg.closest('h1, h2, h3, h4, h5, h6, button, a[href], [role=heading], [role=button]')) return;
        var r = svg.getBoundingClientRect();
        if (r.width < MIN_SIDE || r.height < MIN_SIDE) return;
        var shapes = svg.querySelectorAll(SHAPES), marks = [], ticks = [];
        for (var i = 0; i < shapes.length; i++) {
          var s = shapes[i], inTick = s.closest('.tick');
          if (inTick) continue;
          if (s.__data__ !== undefined && s.__data__ !== null && !/^(text)$/i.test(s.localName)) marks.push(s);
        }
        svg.querySelectorAll('.tick').forEach(function (t) { if (t.__data__ !== undefined) ticks.push(t); });
        var added = null;
        if (staticCounts) {
          // Matched by id, else by document order when the page added no top-level svg.
          var base = (svg.id && svg.id in staticCounts.byId) ? staticCounts.byId[svg.id] :
                     (!svg.id && liveCount === staticCounts.byOrder.length) ? staticCounts.byOrder[myOrder] || 0 : 0;
          added = shapes.length - base;
        }
        var isD3 = marks.length >= MIN_D3_MARKS;
        if (!isD3 && !(added != null && added >= 8)) return;
        var title = null, tnode = svg.querySelector(':scope > title') || svg.querySelector('text.title, .title text, text.chart-title, .chart-title');
        if (tnode) title = tnode.textContent;
        // Else the one text set larger or bolder than every other (labels of one size are no title).
        if (!title) { var big = null, bs = 0, second = 0; svg.querySelectorAll('text').forEach(function (t) { if (t.closest('.tick')) return; var fs = parseFloat(win.getComputedStyle(t).fontSize) || 0; var fw = win.getComputedStyle(t).fontWeight; var sc = fs + (+fw >= 600 ? 3 : 0); if (sc > bs) { second = bs; bs = sc; big = t; } else if (sc > second) second = sc; }); if (big && bs > second) title = big.textContent; }
        // group marks by tag+class into series; values are the bound data
        var groups = {}, gorder = [];
        marks.forEach(function (m) { var key = m.localName + (m.getAttribute('class') ? '.' + m.getAttribute('class').split(/\s+/)[0] : ''); if (!groups[key]) { groups[key] = []; gorder.push(key); } groups[key].push(m.__data__); });
        var ss = gorder.map(function (k) { return series(k, 'svg-marks', groups[k], function (d) { if (d && typeof d === 'object' && !Array.isArray(d)) { var o = {}; Object.keys(d).slice(0, 4).forEach(function (q) { var v = d[q]; o[q] = (v && typeof v === 'object') ? str(v) : v; }); return o; } return point(d); }); });
        var axis0 = ticks.length ? ticks[0].parentNode : null;
        var tickLabels = ticks.filter(function (t) { return t.parentNode === axis0; }).map(function (t) { return str(t.textContent); }).filter(Boolean);
        push(frame, off, svg, isD3 ? 'd3' : 'svg-script', { type: null, title: title, labels: tickLabels.slice(0, MAX_LABELS), labelCount: tickLabels.length,
          series: ss, animating: hasTransition(svg) }, host, topHost);
      });
    } catch (e) { out.warnings.push('svg: ' + e.message); }

    // ---- A canvas drawn by a script the suite does not know (a chart library with no
    // registry here, a hand-written drawing): a chart when it is of chart size, in the flow
    // of the page (not a fixed or full-page background layer) and holds a drawing of
    // several colours. One that cannot be read (WebGL, a cross-origin image) is noted.
    try {
      doc.querySelectorAll('canvas').forEach(function (cv) {
        if (claimed(cv)) return;
        var r = cv.getBoundingClientRect();
        if (r.width < MIN_CANVAS_W || r.height < MIN_CANVAS_H) return;
        if (backgroundLayer(cv, win)) return;
        var p = paint(cv);
        if (p === null) {
          out.warnings.push('a canvas drawn by a script the suite does not know could not be read (WebGL or cross-origin content): not a figure: ' + cssPath(cv));
          return;
        }
        if (p < 3) return;
        push(frame, off, cv, 'unknown', { type: 'canvas', title: null, series: [] }, host, topHost);
        out.warnings.push('a canvas drawn by a library the suite does not know is taken as a chart (no data read): ' + cssPath(cv));
      });
    } catch (e) { out.warnings.push('canvas: ' + e.message); }

    // ---- same-origin iframes
    doc.querySelectorAll('iframe, frame, embed, object').forEach(function (f, i) {
      var cw = null;
      try {
        var d = f.contentDocument || (f.getSVGDocument && f.getSVGDocument()) || null;
        cw = (d && d.defaultView) || f.contentWindow || null;
        if (cw) void cw.document.body;
      } catch (e) { out.warnings.push('cross-origin frame skipped: ' + str(f.src || f.data)); return; }
      if (!cw || !cw.document || !cw.document.body || cw.document.documentElement.localName !== 'html') return;
      var r = f.getBoundingClientRect(), cs = win.getComputedStyle(f);
      var o2 = { x: off.x + r.left + (parseFloat(cs.borderLeftWidth) || 0) + (parseFloat(cs.paddingLeft) || 0),
                 y: off.y + r.top + (parseFloat(cs.borderTopWidth) || 0) + (parseFloat(cs.paddingTop) || 0) };
      var before = out.charts.length;
      scan(cw, framePath(cw), o2, f, topHost || f);
      // A local chart file shown by an element of the report itself, in which no script
      // drew a chart: what it shows drawn once and for all (an svg, a canvas, a picture)
      // is one chart, shot whole with the file (whole.rs). A picture file shown by a
      // frame (the browser's image document) is an image figure of the parse already.
      if (!topHost && out.charts.length === before && String(cw.location.href).indexOf(location.origin + '/') === 0 &&
          !/^image\//.test(cw.document.contentType || '')) {
        try { staticChartFile(cw, o2, f); } catch (e) { out.warnings.push('static chart file: ' + e.message); }
      }
    });
  }
  // The largest sizeable drawing of a chart file (see above), when drawings fill a fair
  // share of the file's content: a page of prose with a picture in it is no chart file.
  var STATIC_SHARE = 0.2;
  // A file that loads a chart library, or holds a chart-size canvas left blank, meant
  // to draw a chart by script: when none was found, the page's own failure (a library
  // missing offline, a script error) is why, and what else it shows is no chart.
  var CHART_LIBRARY = /chart|echarts|plotly|highcharts|apexcharts|vega|(^|[\/.-])d3([.@\/-]|$)|amcharts|anychart|billboard|(^|[\/.-])c3([.@\/-]|$)|nvd3|frappe|uplot|recharts|g2plot|antv|bokeh|google\.com\/jsapi|gstatic\.com\/charts/i;
  function meantForScript(doc) {
    var scripts = doc.querySelectorAll('script[src]');
    for (var i = 0; i < scripts.length; i++) if (CHART_LIBRARY.test(scripts[i].getAttribute('src') || '')) return true;
    var canvases = doc.querySelectorAll('canvas');
    for (var j = 0; j < canvases.length; j++) {
      var r = canvases[j].getBoundingClientRect();
      if (r.width >= MIN_CANVAS_W && r.height >= MIN_CANVAS_H && paint(canvases[j]) === 0) return true;
    }
    return false;
  }
  function staticChartFile(win, off, host) {
    var doc = win.document, body = doc.body, best = null, bestArea = 0, area = 0, kind = null;
    if (meantForScript(doc)) return;
    doc.querySelectorAll('svg, canvas, img').forEach(function (el) {
      if (el.localName === 'svg' && el.parentElement && el.parentElement.closest('svg')) return;
      if (el.closest('h1, h2, h3, h4, h5, h6, button, a[href], [role=heading], [role=button]')) return;
      var r = el.getBoundingClientRect();
      if (r.width < MIN_CANVAS_W || r.height < MIN_CANVAS_H) return;
      var cs = win.getComputedStyle(el);
      if (cs.display === 'none' || cs.visibility === 'hidden' || +cs.opacity === 0 || backgroundLayer(el, win)) return;
      if (el.localName === 'svg') {
        if (el.querySelectorAll('rect,circle,ellipse,path,line,polyline,polygon,image,use').length < 3) return;
      } else if (el.localName === 'canvas') {
        var p = paint(el);
        if (p === null || p < 3) return;
      } else if (!(el.complete && el.naturalWidth > 0)) return;
      var a = r.width * r.height;
      area += a;
      if (a > bestArea) { best = el; bestArea = a; kind = el.localName === 'img' ? 'picture' : el.localName; }
    });
    if (!best) return;
    var b = body.getBoundingClientRect();
    if (area < STATIC_SHARE * Math.max(1, b.width * b.height)) return;
    var title = null;
    if (best.localName === 'svg') {
      var t = best.querySelector(':scope > title');
      title = t ? t.textContent : null;
    } else if (best.localName === 'img') title = best.getAttribute('alt');
    push(framePath(win), off, best, 'static', { type: null, title: title, series: [] }, host, host);
    out.warnings.push('chart file ' + framePath(win) + ': no chart drawn by script; its ' + kind + ' is taken as one chart, shot whole');
  }
  var MIN_CANVAS_W = 120, MIN_CANVAS_H = 80;
  // Distinct colours (coarsely binned) of a canvas's drawn pixels, sampled on a grid; 0
  // for a blank one; null when it cannot be read.
  function paint(cv) {
    var w = cv.width, h = cv.height;
    if (!w || !h) return 0;
    var ctx = null;
    try { ctx = cv.getContext('2d'); } catch (e) { return null; }
    if (!ctx) return null;
    var data;
    try { data = ctx.getImageData(0, 0, w, h).data; } catch (e) { return null; }
    var seen = {}, n = 0, step = Math.max(1, Math.floor(Math.sqrt(w * h / 4096)));
    for (var y = 0; y < h; y += step) for (var x = 0; x < w; x += step) {
      var i = (y * w + x) * 4;
      if (data[i + 3] < 16) continue;
      var k = (data[i] >> 5) + ',' + (data[i + 1] >> 5) + ',' + (data[i + 2] >> 5);
      if (!seen[k]) { seen[k] = 1; n++; if (n > 16) return n; }
    }
    return n;
  }
  // A layer behind or over the page rather than in its flow: fixed, or absolutely placed
  // over (nearly) the whole viewport.
  function backgroundLayer(el, win) {
    var cs = win.getComputedStyle(el);
    if (cs.position === 'fixed') return true;
    if (cs.position !== 'absolute') return false;
    var r = el.getBoundingClientRect(), vw = win.innerWidth, vh = win.innerHeight;
    return r.width >= vw * 0.9 && r.height >= vh * 0.9 && (cs.pointerEvents === 'none' || parseInt(cs.zIndex, 10) < 0);
  }
  function hasTransition(svg) { var all = svg.querySelectorAll('*'); for (var i = 0; i < all.length && i < 5000; i++) if (all[i].__transition) return true; return false; }

  // A frame's document as a path below the report origin ("charts/x.html"), else its URL.
  function framePath(w) {
    var href = String(w.location.href), base = location.origin + '/';
    if (href.indexOf(base) === 0) { try { return decodeURIComponent(href.slice(base.length).split(/[?#]/)[0]); } catch (e) { return href.slice(base.length); } }
    return href.slice(0, 500);
  }
  // The visible title of each chart: the nearest heading (h1-h6), element marked as a
  // title (class or role) or bold line that labels the chart's own container, found among
  // the earlier siblings of the chart and of its ancestors, going up only while the
  // container holds no other chart (a heading over a section of several charts labels
  // none of them). A chart in a frame: the frame's document first, then the frame's host.
  var TITLE_CLASS = /(^|[-_\s])(title|heading|header|caption|chart-name|card-name)([-_\s]|$)/i;
  function chartsIn(scope) {
    var n = 0;
    for (var i = 0; i < seen.length; i++) if (seen[i] !== scope && scope.contains(seen[i])) n++;
    for (var j = 0; j < hosts.length; j++) if (hosts[j] !== scope && scope.contains(hosts[j])) n++;
    return n;
  }
  function holdsChart(e) {
    for (var i = 0; i < seen.length; i++) if (e === seen[i] || e.contains(seen[i])) return true;
    for (var j = 0; j < hosts.length; j++) if (e === hosts[j] || e.contains(hosts[j])) return true;
    return false;
  }
  // A title's words as a reader reads them: the text of the element without its icons
  // (an svg, an icon font's glyph or ligature, an emoji before or after the words).
  var ICON_CLASS = /(^|\s)(material-icons|material-symbols[\w-]*|glyphicon|bi|fa[srbl]?|fa-solid|fa-regular|fa-brands|icon|iconify)(\s|$)/;
  var EDGE_ICONS = /^[\s\p{Extended_Pictographic}\p{Emoji_Presentation}\p{Regional_Indicator}\p{Co}\u200d\ufe0e\ufe0f\u20e3\u{1f3fb}-\u{1f3ff}|:\u2013\u2014-]+|[\s\p{Extended_Pictographic}\p{Emoji_Presentation}\p{Regional_Indicator}\p{Co}\u200d\ufe0e\ufe0f\u20e3\u{1f3fb}-\u{1f3ff}|:\u2013\u2014-]+$/gu;
  function wordsOf(e) {
    var parts = [];
    (function walk(n) {
      for (var c = n.firstChild; c; c = c.nextSibling) {
        if (c.nodeType === 3) parts.push(c.nodeValue);
        else if (c.nodeType === 1) {
          var icon = ICON_CLASS.test(c.getAttribute('class') || '') || c.getAttribute('aria-hidden') === 'true' ||
            /^(svg|script|style|template|img|canvas)$/.test(c.localName) || (c.localName === 'i' && !/[\p{L}\p{N}]/u.test(c.textContent));
          if (icon) { parts.push(' '); continue; }
          var block = /^(div|p|br|li|h[1-6]|section|header|ul|ol|table|tr|td)$/.test(c.localName);
          if (block) parts.push(' ');
          walk(c);
          if (block) parts.push(' ');
        }
      }
    })(e);
    return parts.join('');
  }
  function titleText(e) {
    var t = str(wordsOf(e));
    if (t) t = t.replace(EDGE_ICONS, '').trim();
    return t && t.length <= 160 ? t : null;
  }
  function asTitle(e) {
    if (!e || e.nodeType !== 1) return null;
    var name = e.localName;
    if (/^(script|style|template|canvas|svg|iframe|table|ul|ol)$/.test(name)) return null;
    if (/^h[2-6]$/.test(name) || e.getAttribute('role') === 'heading') return titleText(e);
    // A bold line: the element's whole text is one <strong>/<b>.
    if (/^(strong|b)$/.test(name)) return titleText(e);
    // (An icon beside the bold words is not part of the line.)
    var kids = [].filter.call(e.children, function (k) { return titleText(k) !== null || !/^(svg|i|img|span)$/.test(k.localName); });
    if (kids.length === 1 && /^(strong|b)$/.test(kids[0].localName) && titleText(kids[0]) === titleText(e)) return titleText(e);
    // A header row holding the title (a card header with a heading and buttons).
    var inner = e.querySelector('h2, h3, h4, h5, h6, [role=heading]');
    if (inner && (e.textContent || '').length <= 300) return titleText(inner);
    if (TITLE_CLASS.test(e.getAttribute('class') || '')) return titleText(e);
    return null;
  }
  function headingOf(el) {
    var e = el;
    for (var up = 0; up < 8 && e && e.parentElement; up++, e = e.parentElement) {
      var scope = e.parentElement;
      // The top page's own level labels the report, not one chart (a chart file's
      // body is the chart's own container).
      if (/^(body|html)$/.test(scope.localName) && scope.ownerDocument === document) return null;
      var p = e.previousElementSibling;
      for (var k = 0; k < 4 && p; k++, p = p.previousElementSibling) {
        if (holdsChart(p)) return null;       // another chart's area lies between
        var t = asTitle(p);
        if (t) return chartsIn(scope) > 1 ? null : t;
      }
      if (chartsIn(scope) > 1) return null;
    }
    return null;
  }
  var hosts = [];
  scan(window, null, { x: 0, y: 0 }, null, null);
  out.charts.forEach(function (c, i) {
    var el = elements[i];
    var h = null;
    try { h = headingOf(el); } catch (e) {}
    if (!h && chartHosts[i]) { try { h = headingOf(chartHosts[i]); } catch (e) {} }
    c.heading = h;
  });
  // ---- Boxes the page fills only after a reader's action. The page's own code is read,
  // nothing is clicked: the inline scripts of the page, the handlers it registered for
  // a click, a choice, a tab or a modal (hooks.js records them; `onclick` properties and
  // attributes are read here) and the functions those handlers call by name. A box is
  // filled on action when its id is named only inside that code, and none of the
  // functions naming it is also called or passed on from code that may run at load;
  // or, when one is, no code asked for the id while the page loaded (hooks.js records
  // the ids looked up) and every script of the page loaded and ran without an error.
  var actionScan = null;
  var ON_PROPS = ['onclick', 'ondblclick', 'onchange', 'oninput', 'onsubmit', 'onmousedown', 'onpointerdown', 'ontoggle', 'onkeydown'];
  var NOT_CALLS = /^(if|for|while|switch|catch|function|return|typeof|new|await|async|do|else|with|void|delete|in|of|super|this|import)$/;
  // The end (exclusive) of the function whose body starts at the first '{' from `i`
  // (an arrow's expression body: to the end of its statement).
  function bodyEnd(T, i) {
    var j = i;
    while (j < T.length && /\s/.test(T[j])) j++;
    if (T[j] !== '{') { var e = T.slice(j).search(/[;\n]/); return e < 0 ? T.length : j + e; }
    var depth = 0, q = null;
    for (; j < T.length; j++) {
      var ch = T[j];
      if (q) { if (ch === '\\') j++; else if (ch === q) q = null; continue; }
      if (ch === '"' || ch === "'" || ch === '`') { q = ch; continue; }
      if (ch === '/' && T[j + 1] === '/') { var nl = T.indexOf('\n', j); j = nl < 0 ? T.length : nl; continue; }
      if (ch === '/' && T[j + 1] === '*') { var ce = T.indexOf('*/', j + 2); j = ce < 0 ? T.length : ce + 1; continue; }
      if (ch === '{') depth++;
      else if (ch === '}' && --depth === 0) return j + 1;
    }
    return T.length;
  }
  function reEsc(x) { return x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); }
  // Each definition of a function named `n` in T: {start, end}, its whole text.
  function definitions(T, n) {
    var N = reEsc(n), out2 = [];
    var forms = [
      new RegExp('function\\s*\\*?\\s*' + N + '\\s*\\(', 'g'),
      new RegExp('(?:^|[^\\w$.])' + N + '\\s*[=:]\\s*(?:async\\s+)?function\\b[^(]*\\(', 'g'),
      new RegExp('(?:^|[^\\w$.])' + N + '\\s*[=:]\\s*(?:async\\s+)?(?:\\([^)]*\\)|[\\w$]+)\\s*=>', 'g'),
      new RegExp('(?:^|[\\s,{;])(?:async\\s+)?' + N + '\\s*\\([^)]*\\)\\s*\\{', 'g')
    ];
    forms.forEach(function (re, f) {
      var m;
      while ((m = re.exec(T)) && out2.length < 20) {
        var after = m.index + m[0].length;
        var open = f === 2 ? after : (f === 3 ? after - 1 : T.indexOf(')', after - 1) + 1);
        if (f !== 2 && f !== 3) { var b = T.indexOf('{', open); if (b < 0) continue; open = b; }
        out2.push({ start: m.index, end: bodyEnd(T, open) });
      }
    });
    return out2;
  }
  function actionCode() {
    if (actionScan) return actionScan;
    var T = '';
    document.querySelectorAll('script:not([src])').forEach(function (sc) {
      var ty = (sc.getAttribute('type') || '').toLowerCase();
      if (!ty || /javascript|ecmascript|module/.test(ty)) T += '\n' + sc.textContent;
    });
    var texts = [];   // handler code outside T: inline attributes
    var fns = ((window.__tvirHooks && window.__tvirHooks.actions) || []).slice();
    var all = document.querySelectorAll('*');
    for (var i = 0; i < all.length && i < 20000; i++) {
      for (var k = 0; k < ON_PROPS.length; k++) {
        var a = all[i].getAttribute(ON_PROPS[k]);
        if (a) { if (texts.length < 300) texts.push(a); continue; }
        var f = all[i][ON_PROPS[k]];
        if (typeof f === 'function' && fns.indexOf(f) < 0 && fns.length < 600) fns.push(f);
      }
    }
    // Functions reached from the handlers: {name, ranges}; roots have no name unless
    // declared with one.
    var reached = [], byName = {};
    var work = texts.slice();
    function reach(name, ranges) {
      if (name && byName[name]) return;
      var fnode = { name: name, ranges: ranges };
      reached.push(fnode); if (name) byName[name] = fnode;
      ranges.forEach(function (r) { work.push(T.slice(r.start, r.end)); });
    }
    fns.forEach(function (fn) {
      var src; try { src = Function.prototype.toString.call(fn); } catch (e) { return; }
      if (!src || src.length < 4) return;
      var at = T.indexOf(src);
      if (at < 0) return;
      var named = /^(?:async\s+)?function\s*\*?\s*([\w$]+)/.exec(src);
      reach(named ? named[1] : null, [{ start: at, end: at + src.length }]);
    });
    for (var w = 0; w < work.length && w < 200; w++) {
      var re = /([A-Za-z_$][\w$]*)\s*\(/g, m;
      while ((m = re.exec(work[w]))) {
        var n = m[1];
        // (Names of one or two letters are a minified library's, not the page's own.)
        if (n.length < 3 || NOT_CALLS.test(n) || byName[n] || reached.length >= 100) continue;
        var defs = definitions(T, n);
        if (defs.length) reach(n, defs);
      }
    }
    // A reached function that code outside the handlers' reach also names (a call at
    // load, a timer, a load handler) may run at load: not only on action. Until no
    // more is taken out; handing it to addEventListener or an on-property is not a call.
    var live = reached.slice(), changed = true;
    function inside(pos, except) {
      for (var i2 = 0; i2 < live.length; i2++) {
        if (live[i2] === except) continue;
        for (var j2 = 0; j2 < live[i2].ranges.length; j2++) { var r = live[i2].ranges[j2]; if (pos >= r.start && pos < r.end) return true; }
      }
      return false;
    }
    live.forEach(function (fnode) {
      fnode.refs = [];
      if (!fnode.name) return;
      var ref = new RegExp('(^|[^\\w$])' + reEsc(fnode.name) + '(?![\\w$])', 'g'), mm;
      while ((mm = ref.exec(T)) && fnode.refs.length < 200) {
        var pos = mm.index + mm[1].length;
        if (fnode.ranges.some(function (r) { return pos >= r.start && pos < r.end; })) continue;   // its own text
        var before = T.slice(Math.max(0, pos - 80), pos);
        if (/addEventListener\(\s*['"][\w.]+['"]\s*,\s*$/.test(before) || /\.on\w+\s*=\s*$/.test(before)) continue;
        // Handed to jQuery: `.on('click', f)`, `.on('click', '#sel', f)`, `.click(f)`.
        if (/\.(?:on|one|bind|delegate|click|dblclick|change|submit)\(\s*(?:['"][^'"]*['"]\s*,\s*){0,2}$/.test(before)) continue;
        fnode.refs.push(pos);
      }
    });
    for (var round = 0; changed && round < 100; round++) {
      changed = false;
      for (var x = 0; x < live.length; x++) {
        var fnode = live[x];
        if (fnode.refs.some(function (pos) { return !inside(pos, fnode); })) { live.splice(x, 1); x--; changed = true; }
      }
    }
    var H0 = window.__tvirHooks;
    var reachedAt = function (pos) {
      return reached.some(function (f) { return f.ranges.some(function (r) { return pos >= r.start && pos < r.end; }); });
    };
    actionScan = { T: T, texts: texts, live: live, inside: inside, reachedAt: reachedAt, lookups: (H0 && H0.lookups) || {},
      quiet: !!(H0 && H0.lookups && !H0.failedScripts && !(H0.pageErrors && H0.pageErrors.length)) };
    return actionScan;
  }
  // Why the element is filled only on a reader's action, or null. The ids that count
  // are those of the element and what it holds (not of a button in it); an id named by
  // code that may run at load keeps the box a chart's place when its element is where
  // a chart is drawn (a canvas, an svg, an empty box), not when it is a panel around
  // it (a tab panel the page shows at load by its id).
  function filledOnAction(el) {
    var ids = [];
    [el].concat([].slice.call(el.querySelectorAll('[id]'), 0, 8)).forEach(function (d) {
      if (d.id && !d.closest(CONTROLS)) ids.push({ id: d.id, target: /^(canvas|svg)$/.test(d.localName) || !d.firstElementChild });
    });
    if (!ids.length) return null;
    var A = actionCode();
    if (!A.live.length && !A.texts.length) return null;
    var onAction = 0;
    for (var i = 0; i < ids.length; i++) {
      var id = ids[i].id, idx = -1;
      while ((idx = A.T.indexOf(id, idx + 1)) >= 0) {
        var before = A.T[idx - 1], after = A.T[idx + id.length] || '';
        if (!/['"`#]/.test(before || '') || /[\w-]/.test(after)) continue;
        if (A.inside(idx, null)) onAction++;
        // Code a handler reaches that may also run at load: on action only when no code
        // asked for the id at load, in a page whose scripts all loaded and ran without
        // an error (a tab function the page runs for the first tab, drawing this chart
        // only for another tab).
        else if (A.reachedAt(idx)) {
          if (ids[i].target && !(A.quiet && !A.lookups[id])) return null;
          onAction++;
        } else if (ids[i].target) return null;   // drawn by other code
      }
      A.texts.forEach(function (t) { if (new RegExp('[\'"`#]' + reEsc(id) + '(?![\\w-])').test(t)) onAction++; });
    }
    return onAction ? 'filled only by code a click or another action of the reader runs (none at load)' : null;
  }
  // Controls and widgets: never a place for a chart.
  var CONTROLS = 'button, a[href], input, select, textarea, label, summary, [role=button], [role=link], ' +
    '[role=progressbar], [role=slider], [role=tab], [role=tablist], [role=menu], [role=menubar], ' +
    '[role=toolbar], [role=navigation], [role=search], [role=dialog], [role=tooltip]';
  // Text a chart's box shows until the chart is drawn.
  var PLACEHOLDER = /^(loading|rendering|chart|graph|plot|please wait|加载|載入|読み込み)|loading\W*$/i;
  // What the live page shows at each element the caller expects a chart in (see
  // SlotProbe in lib.rs).
  out.probes = (opts.probes || []).map(function (at) {
    var list = document.querySelectorAll('[data-tvir-at="' + at + '"]'), el = list[0];
    for (var i = 0; i < list.length; i++) if (list[i].classList.contains('tvir-spec-file')) el = list[i];
    if (!el) return { anchor: at, state: 'gone' };
    try { return slotState(at, el); } catch (e) { return { anchor: at, state: 'empty', detail: 'unreadable: ' + e.message }; }
  });
  function slotState(at, el) {
    var res = function (state, detail) { var o = { anchor: at, state: state }; if (detail) o.detail = str(detail); return o; };
    // Nothing drawn there at load: no chart at all when only a reader's action would
    // fill it (a tab, a button, a modal), else a chart's place left undrawn.
    var undrawn = function (state) {
      var why = null;
      try { why = filledOnAction(el); } catch (e) {}
      return why ? res('after-click', why) : res(state);
    };
    for (var i = 0; i < elements.length; i++) {
      var c = elements[i];
      if (c === el || el.contains(c) || (c.contains && c.contains(el)) || chartHosts[i] === el) return res('chart');
    }
    var tag = el.localName;
    if (el.closest(CONTROLS) || /^(option|form)$/.test(tag)) return res('control');
    var spec = el.classList.contains('tvir-spec-file') ? el : el.querySelector('.tvir-spec-file');
    if (spec) {
      var st = spec.getAttribute('data-tvir-spec') || 'loading';
      if (st === 'none') return res('not-a-chart', 'its file holds no chart');
      if (/^failed/.test(st)) return res('failed', st.replace(/^failed:\s*/, ''));
      return res('empty', st === 'loading' ? 'its file was still loading' : null);
    }
    if (/^(iframe|frame|embed|object)$/.test(tag)) return res('frame');
    var hidden = false;
    for (var e = el; e && e.nodeType === 1; e = e.parentElement) {
      var cs = getComputedStyle(e);
      if (cs.display === 'none' || cs.visibility === 'hidden') { hidden = true; break; }
    }
    var drawing = /^(canvas|svg)$/.test(tag) ? el : el.querySelector('canvas, svg');
    if (!drawing) {
      // A box showing text (a figure a script counts up, a note it fills in) is no
      // place for a chart; a loading placeholder is.
      var text = (el.innerText || el.textContent || '').replace(/\s+/g, ' ').trim();
      if (text && !PLACEHOLDER.test(text)) return res('text', text.slice(0, 80));
      if (!text && el.querySelector(CONTROLS)) return res('control');
      // An empty layer over the page (a reading-progress bar, a tooltip, an overlay),
      // not a box in its flow.
      if (/^(fixed|absolute|sticky)$/.test(getComputedStyle(el).position)) return res('layer');
      return undrawn(hidden ? 'hidden' : 'empty');
    }
    if (hidden) return undrawn('hidden');
    var r = drawing.getBoundingClientRect();
    if (r.width < MIN_SIDE || r.height < MIN_SIDE) return res('small');
    if (drawing.localName === 'canvas') {
      var p = paint(drawing);
      return p === 0 ? undrawn('empty') : res('drawn', p === null ? 'unreadable canvas' : 'a drawing no library claims');
    }
    var shapes = drawing.querySelectorAll('rect,circle,ellipse,path,line,polyline,polygon,text,image,use').length;
    return shapes ? res('drawn', 'an svg no library claims') : undrawn('empty');
  }
  out.popupsBlocked = (window.__tvirHooks && window.__tvirHooks.popups) || 0;
  // Script errors of every same-origin document (hooks.js).
  out.scriptErrors = [];
  (function errs(win, frame) {
    try { var H2 = win.__tvirHooks; if (H2 && H2.pageErrors) H2.pageErrors.forEach(function (e) { out.scriptErrors.push({ frame: frame, message: e.message, where: e.where }); }); } catch (e) {}
    try { win.document.querySelectorAll('iframe, frame').forEach(function (f) { try { if (f.contentWindow && f.contentWindow.document) errs(f.contentWindow, framePath(f.contentWindow)); } catch (e) {} }); } catch (e) {}
  })(window, null);
  return out;
})
