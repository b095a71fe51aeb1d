// capture.js — evaluated (awaiting its promise) between detect.js and each screenshot. The window
// is never resized: each chart is scrolled into the fixed viewport and the screenshot clips the
// visible pixels (captureBeyondViewport off), because a resize makes responsive pages redraw or
// move their charts while the picture is taken. One entry point, `op` picks the step:
//   {op:'prepare'}                        finish the page's CSS animations/transitions, instant scrolling
//   {op:'growth', charts:[[frame,sel]..]} measure twice ~200 ms apart; freeze the boxes still growing
//                                         (see freeze), at most the viewport
//   {op:'place', frame, selector}         scroll the chart into view, hide fixed/sticky bars over it,
//                                         return its box in page coordinates of the top document
//   {op:'restore'}                        show the bars hidden by 'place' again
//   {op:'redraw', frame, selector}        ask the chart's library to draw it again (blank shot)
//   {op:'reveal', frame, selector}        show the display:none ancestors of a chart (tab panels)
//   {op:'unreveal'}                       put them back
//   {op:'whole', frame, anchor, key, grow} the element showing a chart file: the file's title;
//                                         grow: mark it `data-tvir-whole=key`, grown to the file's height
//   {op:'scrollPass'}                     scroll the page top to bottom one viewport at a time, as a
//                                         reader does (lazy charts are created, reveal observers fire),
//                                         then back to the top
// 'place' also waits (op.settleMs) for the chart to reveal itself: opacity, visibility and
// transforms of the chart and its ancestors (across frames) settled, their animations finished;
// a chart that never reveals is shown by force, and `forced` says what was forced.
(async function tvirCapture(op) {
  'use strict';
  var T = window.__tvirCapture || (window.__tvirCapture = { hidden: [], revealed: [], unclipped: [] });
  T.unclipped = T.unclipped || [];
  function frames() { return new Promise(function (r) { requestAnimationFrame(function () { requestAnimationFrame(function () { r(); }); }); }); }
  function sleep(ms) { return new Promise(function (r) { setTimeout(r, ms); }); }
  function framePath(w) {
    var href = String(w.location.href), base = location.origin + '/';
    if (href.indexOf(base) === 0) { try { return decodeURIComponent(href.slice(base.length).split(/[?#]/)[0]); } catch (e) { return href.slice(base.length); } }
    return href.slice(0, 500);
  }
  // Every same-origin document with its offset from the top viewport: [{win, host, off:{x,y}}].
  function docs() {
    var out = [];
    (function walk(win, host, off) {
      out.push({ win: win, host: host, off: off });
      var list; try { list = win.document.querySelectorAll('iframe, frame, embed, object'); } catch (e) { return; }
      list.forEach(function (f) {
        var cw = null;
        try { var d = f.contentDocument || (f.getSVGDocument && f.getSVGDocument()) || null; cw = (d && d.defaultView) || f.contentWindow || null; if (cw) void cw.document.body; } catch (e) { return; }
        if (!cw || !cw.document || !cw.document.body) return;
        var r = f.getBoundingClientRect(), cs = win.getComputedStyle(f);
        walk(cw, f, { x: off.x + r.left + (parseFloat(cs.borderLeftWidth) || 0) + (parseFloat(cs.paddingLeft) || 0),
                      y: off.y + r.top + (parseFloat(cs.borderTopWidth) || 0) + (parseFloat(cs.paddingTop) || 0) });
      });
    })(window, null, { x: 0, y: 0 });
    return out;
  }
  function find(frame, selector) {
    var ds = docs();
    for (var i = 0; i < ds.length; i++) {
      var d = ds[i];
      if ((frame == null && d.win === window) || (frame != null && d.win !== window && framePath(d.win) === frame)) {
        var el = null; try { el = d.win.document.querySelector(selector); } catch (e) {}
        if (el) return { el: el, d: d };
      }
    }
    return null;
  }
  // Viewport rectangle of the element in the top window.
  function rect(f) {
    var off = f.d.host ? docs().filter(function (x) { return x.win === f.d.win; })[0].off : { x: 0, y: 0 };
    var r = f.el.getBoundingClientRect();
    return { left: r.left + off.x, top: r.top + off.y, width: r.width, height: r.height };
  }
  function finishAnimations() {
    var n = 0;
    docs().forEach(function (d) {
      try {
        d.win.document.getAnimations().forEach(function (a) {
          try { a.finish(); n++; } catch (e) { try { a.cancel(); n++; } catch (e2) {} } // infinite ones cannot finish
        });
      } catch (e) {}
    });
    return n;
  }
  function instantScrolling() {
    docs().forEach(function (d) {
      try {
        d.win.document.documentElement.style.setProperty('scroll-behavior', 'auto', 'important');
        if (d.win.document.body) d.win.document.body.style.setProperty('scroll-behavior', 'auto', 'important');
      } catch (e) {}
    });
  }
  function chartjsOf(win, el) {
    var C = win.Chart; if (!C) return null;
    try { if (C.getChart) return C.getChart(el) || null; } catch (e) {}
    if (C.instances) { var ks = Object.keys(C.instances); for (var i = 0; i < ks.length; i++) { var ch = C.instances[ks[i]]; if (ch && ch.canvas === el) return ch; } }
    return null;
  }
  function redraw(f) {
    var win = f.d.win, el = f.el;
    try { var ch = chartjsOf(win, el); if (ch) { if (ch.resize) ch.resize(); ch.update(win.Chart.defaults && win.Chart.defaults.global ? 0 : 'none'); } } catch (e) {}
    try { var ins = win.echarts && win.echarts.getInstanceByDom && win.echarts.getInstanceByDom(el); if (ins) ins.resize({ animation: { duration: 0 } }); } catch (e) {}
    try { if (win.Highcharts && win.Highcharts.charts) win.Highcharts.charts.forEach(function (c) { if (c && c.renderTo === el) { c.reflow(); c.redraw(false); } }); } catch (e) {}
    try { if (win.Plotly && win.Plotly.Plots && el.classList.contains('js-plotly-plot')) win.Plotly.Plots.resize(el); } catch (e) {}
  }
  // Stop a chart from resizing itself any further and have it drawn at a size that does not
  // depend on when it was measured: a Chart.js chart at its width and its own aspect ratio
  // (2, or 1 for round charts), others at the first measured size; never over the viewport.
  function freeze(f, first) {
    var el = f.el, win = f.d.win;
    var ch = null; try { ch = chartjsOf(win, el); } catch (e) {}
    var w = Math.round(Math.min(el.getBoundingClientRect().width, window.innerWidth)), h = first.height;
    if (ch) { var ar = +(ch.options && ch.options.aspectRatio) || 2; h = w / ar; }
    h = Math.round(Math.min(h, window.innerHeight));
    if (ch) {
      try { ch.options.responsive = false; if (ch.unbindEvents) ch.unbindEvents(); if (ch.bindEvents) ch.bindEvents(); } catch (e) {}
      try { ch.resize(w, h); } catch (e) {}
    }
    ['width', 'height', 'max-width', 'max-height', 'min-width', 'min-height'].forEach(function (p) {
      el.style.setProperty(p, (/width/.test(p) ? w : h) + 'px', 'important');
    });
    try { var ins = win.echarts && win.echarts.getInstanceByDom && win.echarts.getInstanceByDom(el); if (ins) ins.resize({ width: w, height: h }); } catch (e) {}
    return { width: w, height: h };
  }

  // The chart's ancestors up to the top document (through same-origin frame hosts).
  function chain(el) {
    var out = [];
    for (var e = el; e && e.nodeType === 1; ) {
      out.push(e);
      if (e.parentElement) { e = e.parentElement; continue; }
      var host = null; try { host = e.ownerDocument.defaultView.frameElement; } catch (x) {}
      e = host;
    }
    return out;
  }
  function veil(el) {
    var op = 1, hidden = [], faint = [], tf = [], running = 0;
    chain(el).forEach(function (e) {
      var cs = e.ownerDocument.defaultView.getComputedStyle(e), o = +cs.opacity;
      if (isFinite(o)) { op *= o; if (o < 0.99) faint.push(e); }
      if (cs.visibility === 'hidden') hidden.push(e);
      if (cs.transform && cs.transform !== 'none') tf.push(cs.transform);
      try { e.getAnimations().forEach(function (a) { if (a.playState === 'running') running++; }); } catch (x) {}
    });
    return { opacity: op, hidden: hidden, faint: faint, key: op.toFixed(3) + '|' + hidden.length + '|' + tf.join('|'), running: running };
  }
  function describe(e) {
    var s = e.localName; if (e.id) s += '#' + e.id;
    else if (e.classList && e.classList.length) s += '.' + [].slice.call(e.classList, 0, 2).join('.');
    return s;
  }
  // Wait for the chart to be revealed: fully opaque, not hidden, its transforms and
  // animations still over two checks in a row. Returns null, or what was forced.
  async function settle(el, ms) {
    var t0 = performance.now(), last = null, still = 0, v = veil(el);
    while (performance.now() - t0 < ms) {
      if (finishAnimations()) await frames();
      v = veil(el);
      if (v.opacity >= 0.99 && !v.hidden.length && !v.running && v.key === last) { if (++still >= 2) return null; }
      else still = 0;
      last = v.key;
      await frames(); await sleep(40);
    }
    if (v.opacity >= 0.99 && !v.hidden.length) return null;
    var what = [];
    v.faint.forEach(function (e) {
      var cs = e.ownerDocument.defaultView.getComputedStyle(e);
      what.push('opacity ' + (+cs.opacity).toFixed(2) + ' of ' + describe(e));
      ['transition', 'animation'].forEach(function (p) { e.style.setProperty(p, 'none', 'important'); });
      e.style.setProperty('opacity', '1', 'important');
      if (cs.transform && cs.transform !== 'none') e.style.setProperty('transform', 'none', 'important');
    });
    v.hidden.forEach(function (e) { what.push('visibility of ' + describe(e)); e.style.setProperty('visibility', 'visible', 'important'); });
    await frames();
    return 'reveal forced after ' + Math.round(ms) + ' ms: ' + what.slice(0, 4).join(', ');
  }

  // Library UI that is not part of the chart: mode bars, export and menu buttons, zoom and
  // range controls, toolbars, credits, tooltips left open. Hidden (visibility, restored by
  // 'restore') in every document for the shot; an ECharts toolbox, drawn inside the
  // canvas, is switched off.
  var CHROME = ['.modebar-container', '.modebar', '.highcharts-exporting-group', '.highcharts-contextbutton',
    '.highcharts-contextmenu', '.highcharts-credits', '.highcharts-reset-zoom', '.highcharts-range-selector-buttons',
    '.highcharts-tooltip', '.highcharts-label.highcharts-tooltip', '.apexcharts-toolbar', '.apexcharts-tooltip',
    '.apexcharts-xaxistooltip', '.apexcharts-yaxistooltip', '.vega-embed > details', '.vega-actions',
    '.google-visualization-tooltip', '.amcharts-amexport-menu', '.am5-tooltip-container',
    '.plotly-notifier', '.js-plotly-plot .hoverlayer', '.echarts-tooltip', '.d3-tip', '[role=tooltip]'].join(', ');
  function hideChrome() {
    docs().forEach(function (d) {
      var list = []; try { list = d.win.document.querySelectorAll(CHROME); } catch (e) {}
      list.forEach(function (e) {
        T.hidden.push([e, e.style.getPropertyValue('visibility'), e.style.getPropertyPriority('visibility')]);
        e.style.setProperty('visibility', 'hidden', 'important');
      });
      try {
        var E = d.win.echarts;
        if (E && E.getInstanceByDom) d.win.document.querySelectorAll('[_echarts_instance_]').forEach(function (el) {
          var ins = E.getInstanceByDom(el); if (!ins) return;
          try { ins.dispatchAction({ type: 'hideTip' }); } catch (e) {}
          var o = ins.getOption() || {};
          if (o.toolbox && o.toolbox.length && o.toolbox.some(function (t) { return t && t.show !== false; })) {
            ins.setOption({ toolbox: o.toolbox.map(function () { return { show: false }; }) }, { lazyUpdate: false, silent: true });
            try { ins.getZr().flush(); } catch (e) {}
          }
        });
      } catch (e) {}
      try { // Highcharts tooltips drawn outside the chart box, Chart.js tooltips left active
        var C = d.win.Chart;
        if (C && C.instances) Object.keys(C.instances).forEach(function (k) { var ch = C.instances[k];
          if (ch && ch.tooltip && ch.tooltip.getActiveElements && ch.tooltip.getActiveElements().length) { ch.tooltip.setActiveElements([], { x: 0, y: 0 }); ch.update('none'); } });
      } catch (e) {}
    });
  }

  // Boxes that clip the chart (overflow other than visible: a sideways-scrolling box
  // narrower than the chart, a fixed-height panel) are opened for the shot, so the
  // chart is captured whole and scrolling it into view does not scroll the box under
  // it; 'restore' puts their overflow and scroll offsets back.
  function unclip(el) {
    var n = 0, c = el.getBoundingClientRect();
    for (var e = el.parentElement; e && e !== el.ownerDocument.body && e !== el.ownerDocument.documentElement; e = e.parentElement) {
      var cs = el.ownerDocument.defaultView.getComputedStyle(e);
      if (cs.overflowX === 'visible' && cs.overflowY === 'visible') continue;
      var b = e.getBoundingClientRect();
      var cutX = cs.overflowX !== 'visible' && (c.left < b.left - 0.5 || c.right > b.right + 0.5 || c.width > e.clientWidth + 0.5);
      var cutY = cs.overflowY !== 'visible' && (c.top < b.top - 0.5 || c.bottom > b.bottom + 0.5 || c.height > e.clientHeight + 0.5);
      if (!cutX && !cutY) continue;
      T.unclipped.push([e, e.style.getPropertyValue('overflow'), e.style.getPropertyPriority('overflow'), e.scrollLeft, e.scrollTop]);
      e.scrollLeft = 0; e.scrollTop = 0;
      e.style.setProperty('overflow', 'visible', 'important');
      n++;
    }
    return n;
  }
  function reclip() {
    T.unclipped.reverse().forEach(function (u) {
      if (u[1]) u[0].style.setProperty('overflow', u[1], u[2]); else u[0].style.removeProperty('overflow');
      u[0].scrollLeft = u[3]; u[0].scrollTop = u[4];
    });
    T.unclipped = [];
  }

  if (op.op === 'scrollPass') {
    // The page's height when the pass starts bounds it: a page that keeps growing (a chart
    // resizing its own container) is not chased.
    var se = document.scrollingElement || document.documentElement, step = Math.max(200, Math.round(window.innerHeight * 0.8)), n = 0;
    var end = se.scrollHeight;
    for (var y = 0; n < (op.maxSteps || 80) && y + window.innerHeight < end - 2; n++) {
      y += step; window.scrollTo({ left: 0, top: y, behavior: 'instant' }); await frames(); await sleep(30);
    }
    await frames(); await sleep(op.waitMs || 300);
    window.scrollTo({ left: 0, top: 0, behavior: 'instant' }); await frames();
    return { steps: n };
  }
  if (op.op === 'prepare') {
    instantScrolling();
    var n = finishAnimations();
    await frames();
    return { finished: n };
  }
  if (op.op === 'growth') {
    var found = op.charts.map(function (c) { return find(c[0], c[1]); });
    var first = found.map(function (f) { return f ? rect(f) : null; });
    await sleep(op.waitMs || 200); await frames();
    var grown = [];
    found.forEach(function (f, i) {
      if (!f || !first[i]) return;
      var r = rect(f);
      if (r.height > first[i].height + 1 || r.width > first[i].width + 1) {
        var to = freeze(f, first[i]);
        grown.push({ index: i, from: [Math.round(first[i].width), Math.round(first[i].height)], to: [to.width, to.height] });
      }
    });
    if (grown.length) await frames();
    return { grown: grown };
  }
  if (op.op === 'place') {
    var f = find(op.frame, op.selector);
    if (!f) return { found: false };
    reclip();
    var unclipped = unclip(f.el);
    if (unclipped) await frames();
    var r0 = rect(f), vw = window.innerWidth, vh = window.innerHeight;
    var tall = r0.height > vh, wide = r0.width > vw;
    try { f.el.scrollIntoView({ block: tall ? 'start' : 'center', inline: wide ? 'start' : 'center', behavior: 'instant' }); } catch (e) { f.el.scrollIntoView(tall); }
    await frames();
    // Scrolling may start the page's own reveal animations (scroll-triggered fade-ins).
    if (finishAnimations()) await frames();
    var forced = await settle(f.el, op.settleMs == null ? 2500 : op.settleMs);
    var r = rect(f);
    T.hidden = [];
    hideChrome();
    docs().forEach(function (d) {
      var all = d.win.document.body ? d.win.document.body.querySelectorAll('*') : [];
      for (var i = 0; i < all.length && i < 20000; i++) {
        var e = all[i];
        if (e === f.el || e.contains(f.el) || f.el.contains(e)) continue;
        var cs = d.win.getComputedStyle(e);
        if (cs.position !== 'fixed' && cs.position !== 'sticky') continue;
        var q = e.getBoundingClientRect();
        var ql = q.left + d.off.x, qt = q.top + d.off.y;
        if (ql < r.left + r.width && ql + q.width > r.left && qt < r.top + r.height && qt + q.height > r.top) {
          T.hidden.push([e, e.style.getPropertyValue('visibility'), e.style.getPropertyPriority('visibility')]);
          e.style.setProperty('visibility', 'hidden', 'important');
        }
      }
    });
    await frames();
    r = rect(f);
    // Why the box cannot be shown whole, when it cannot: larger than the viewport, or
    // placed where the page does not scroll far enough to show all of it.
    var cutWhy = null;
    if (r.width > vw + 0.5 || r.height > vh + 0.5) cutWhy = 'larger than the ' + vw + 'x' + vh + ' viewport';
    else if (r.left < -0.5 || r.top < -0.5 || r.left + r.width > vw + 0.5 || r.top + r.height > vh + 0.5)
      cutWhy = 'fits the ' + vw + 'x' + vh + ' viewport but at its place on the page (x ' + Math.round(r.left + window.scrollX) +
        ' to ' + Math.round(r.left + r.width + window.scrollX) + ', y ' + Math.round(r.top + window.scrollY) + ' to ' +
        Math.round(r.top + r.height + window.scrollY) + ') the page does not scroll to show all of it';
    return { found: true, unclipped: unclipped, cutWhy: cutWhy, x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height,
             scrollX: window.scrollX, scrollY: window.scrollY, vw: vw, vh: vh, hid: T.hidden.length, forced: forced };
  }
  if (op.op === 'whole') {
    // A chart file shown by one element of the top document (op.frame, under op.anchor):
    // the file's own title, and with op.grow that element marked and grown to the file's
    // height (at most the viewport's), so one shot shows the file whole.
    var ds = docs(), host = null, win = null;
    for (var i = 0; i < ds.length; i++) {
      var d = ds[i];
      if (d.win === window || !d.host || d.host.ownerDocument !== document || framePath(d.win) !== op.frame) continue;
      var a = d.host.closest('[data-tvir-at]');
      if (op.anchor != null && (!a || Number(a.getAttribute('data-tvir-at')) !== op.anchor)) continue;
      if (host) return { found: false }; // shown twice under one anchor: not one figure
      host = d.host; win = d.win;
    }
    if (!host) return { found: false };
    var doc = win.document, clean = function (t) { return String(t || '').replace(/\s+/g, ' ').trim().slice(0, 300); };
    var title = clean(doc.title);
    if (!title && doc.body) {
      var heads = doc.body.querySelectorAll('h1, h2, h3, h4, [class*="title" i]');
      for (var j = 0; j < heads.length && !title; j++) title = clean(heads[j].textContent);
    }
    var sel = null;
    if (op.grow) {
      host.setAttribute('data-tvir-whole', op.key);
      sel = '[data-tvir-whole="' + op.key + '"]';
      // The frame's own border is the report's decoration, not the file's picture.
      host.style.setProperty('border', '0', 'important');
      var se = doc.scrollingElement || doc.documentElement;
      var want = Math.min(Math.max(se.scrollHeight, doc.body ? doc.body.scrollHeight : 0), window.innerHeight);
      var box = host.getBoundingClientRect();
      if (want > box.height + 1) { host.style.setProperty('height', want + 'px', 'important'); await frames(); await sleep(100); await frames(); }
    }
    return { found: true, title: title || null, selector: sel };
  }
  if (op.op === 'restore') {
    reclip();
    T.hidden.forEach(function (h) { if (h[1]) h[0].style.setProperty('visibility', h[1], h[2]); else h[0].style.removeProperty('visibility'); });
    T.hidden = [];
    return true;
  }
  if (op.op === 'redraw') {
    var g = find(op.frame, op.selector);
    if (g) { redraw(g); await frames(); await sleep(100); await frames(); }
    return !!g;
  }
  if (op.op === 'reveal') {
    var h = find(op.frame, op.selector);
    if (!h) return { shown: false };
    T.revealed = [];
    for (var e = h.el; e && e.nodeType === 1; e = e.parentElement) {
      var cs = h.d.win.getComputedStyle(e);
      if (cs.display === 'none') {
        T.revealed.push([e, 'display', e.style.getPropertyValue('display'), e.style.getPropertyPriority('display')]);
        e.style.setProperty('display', e.localName === 'canvas' || e.localName === 'svg' ? 'inline-block' : 'block', 'important');
      }
      if (cs.visibility === 'hidden') {
        T.revealed.push([e, 'visibility', e.style.getPropertyValue('visibility'), e.style.getPropertyPriority('visibility')]);
        e.style.setProperty('visibility', 'visible', 'important');
      }
    }
    // Responsive charts learn their new size from a ResizeObserver, then draw a frame later.
    await frames(); redraw(h); await frames(); finishAnimations(); await frames();
    var rr = rect(h);
    return { shown: T.revealed.length > 0, width: rr.width, height: rr.height };
  }
  if (op.op === 'unreveal') {
    T.revealed.reverse().forEach(function (x) { if (x[2]) x[0].style.setProperty(x[1], x[2], x[3]); else x[0].style.removeProperty(x[1]); });
    T.revealed = [];
    await frames();
    return true;
  }
  throw new Error('capture.js: unknown op ' + op.op);
})
