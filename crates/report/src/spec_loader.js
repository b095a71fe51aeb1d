// spec_loader.js — served at the end of a report page that shows chart files holding JSON
// (`<Plot spec="a.vl.json"/>`, `<iframe src="fig.json">`): each `div.tvir-spec-file` is drawn
// with the library its file's content calls for, decided here by what the file holds, not
// by its name. A Vega or Vega-Lite spec ($schema, mark, marks, layer, concat, facet, repeat)
// is drawn with vega-embed; a Plotly figure ({data: [traces], layout} or a list of traces)
// with Plotly. The library is loaded only when a file needs it (through the page's own
// resource rules). Anything else draws nothing: no chart, so no unit.
// `data-tvir-spec` records the decision: "loading" while the file or library is on its way
// (finish.js waits while any div is still loading), then "vega", "plotly", "none" (not a
// chart) or "failed: <why>".
(function (VEGA, PLOTLY) {
  'use strict';
  var loading = {};
  function script(src) {
    if (!loading[src]) loading[src] = new Promise(function (ok, no) {
      var s = document.createElement('script');
      s.src = src;
      s.onload = ok;
      s.onerror = function () { no(new Error('library not loaded: ' + src)); };
      document.head.appendChild(s);
    });
    return loading[src];
  }
  function chain(list) {
    return list.reduce(function (p, src) { return p.then(function () { return script(src); }); }, Promise.resolve());
  }
  function isVega(s) {
    return !!(s && typeof s === 'object' && !Array.isArray(s) &&
      (/vega/i.test(String(s.$schema || '')) || s.mark || s.marks || s.layer || s.vconcat ||
       s.hconcat || s.concat || s.facet || s.repeat));
  }
  function trace(t) {
    return !!(t && typeof t === 'object' && !Array.isArray(t) &&
      (typeof t.type === 'string' || Array.isArray(t.x) || Array.isArray(t.y) ||
       Array.isArray(t.values) || Array.isArray(t.z)));
  }
  function plotly(s) {
    var data = Array.isArray(s) ? s : (s && typeof s === 'object' && Array.isArray(s.data) ? s.data : null);
    if (!data || !data.length || !data.every(trace)) return null;
    var layout = (!Array.isArray(s) && s.layout && typeof s.layout === 'object') ? s.layout : {};
    return { data: data, layout: layout };
  }
  function draw(d) {
    d.setAttribute('data-tvir-spec', 'loading');
    var say = function (what) { d.setAttribute('data-tvir-spec', what); };
    var fail = function (e) { say('failed: ' + String((e && e.message) || e).slice(0, 200)); };
    fetch(d.getAttribute('data-tvir-spec-src')).then(function (r) {
      if (!r.ok) throw new Error('file not served (' + r.status + ')');
      return r.json();
    }).then(function (s) {
      if (isVega(s)) {
        return (window.vegaEmbed ? Promise.resolve() : chain(VEGA)).then(function () {
          return window.vegaEmbed(d, s, { actions: false });
        }).then(function () { say('vega'); });
      }
      var p = plotly(s);
      if (p) {
        if (!d.style.height) d.style.height = '450px';
        return (window.Plotly ? Promise.resolve() : script(PLOTLY)).then(function () {
          return window.Plotly.newPlot(d, p.data, p.layout, { displayModeBar: false, responsive: false });
        }).then(function () { say('plotly'); });
      }
      say('none');
    }).catch(fail);
  }
  function go() { document.querySelectorAll('div.tvir-spec-file').forEach(draw); }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', go); else go();
})
