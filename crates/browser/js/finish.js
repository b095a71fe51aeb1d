// finish.js — evaluated after load and before detect.js: stop/finish chart animations so the
// screenshot shows the final state. Returns {finished: n, pending: bool}. The driver calls it,
// waits two animation frames (or ~100 ms), and calls it again until pending is false or a budget
// (e.g. 2 s) runs out. Works per frame; recurse into same-origin iframes.
(function finishAnimations() {
  'use strict';
  var res = { finished: 0, pending: false, loading: false, errors: [] };
  function each(win) {
    var doc = win.document;
    try { // Chart.js 2/3/4
      var C = win.Chart;
      if (C && C.instances) Object.keys(C.instances).forEach(function (k) {
        var ch = C.instances[k]; if (!ch) return;
        if (C.defaults && C.defaults.global) { ch.options.animation = ch.options.animation || {}; ch.options.animation.duration = 0; ch.update(0); }
        else { ch.options.animation = false; ch.update('none'); }
        if (ch.stop) ch.stop();
        res.finished++;
      });
    } catch (e) { res.errors.push('chartjs ' + e.message); }
    try { // ECharts
      var E = win.echarts;
      if (E && E.getInstanceByDom) doc.querySelectorAll('[_echarts_instance_]').forEach(function (el) {
        var ins = E.getInstanceByDom(el); if (!ins) return;
        ins.setOption({ animation: false }, { lazyUpdate: false, silent: true });
        try {
          var zr = ins.getZr();
          zr && zr.flush && zr.flush();
          // zrender keeps running clips in a linked list: still animating while it has a head.
          if (zr && zr.animation && zr.animation._head) res.pending = true;
        } catch (e) {}
        res.finished++;
      });
    } catch (e) { res.errors.push('echarts ' + e.message); }
    try { // Highcharts
      var HC = win.Highcharts;
      if (HC && HC.charts) HC.charts.forEach(function (ch) {
        if (!ch) return;
        ch.update({ chart: { animation: false }, plotOptions: { series: { animation: false } } }, false, false, false);
        (ch.series || []).forEach(function (s) { if (s.finishedAnimating === false) { s.finishedAnimating = true; } });
        ch.redraw(false);
        res.finished++;
      });
    } catch (e) { res.errors.push('highcharts ' + e.message); }
    try { // ApexCharts: re-render without animations
      var list = [];
      if (win.Apex && Array.isArray(win.Apex._chartInstances)) win.Apex._chartInstances.forEach(function (r) { list.push(r.chart); });
      if (win.__tvirHooks) win.__tvirHooks.apex.forEach(function (c) { if (list.indexOf(c) < 0) list.push(c); });
      list.forEach(function (ch) {
        if (!ch || !ch.w || ch.__tvirFinished) return;
        ch.__tvirFinished = true;
        var enabled = ch.w.config && ch.w.config.chart && ch.w.config.chart.animations && ch.w.config.chart.animations.enabled;
        if (enabled !== false) { ch.updateOptions({ chart: { animations: { enabled: false } } }, true, false, false); res.pending = true; }
        res.finished++;
      });
    } catch (e) { res.errors.push('apex ' + e.message); }
    try { // Plotly: nothing animates unless Plotly.animate was called; wait for pending renders
      doc.querySelectorAll('.js-plotly-plot').forEach(function (gd) { if (gd._transitioning || (gd._promises && gd._promises.length)) res.pending = true; });
    } catch (e) {}
    try { // JSON chart files still being read or drawn by the report's spec loader
      doc.querySelectorAll('div.tvir-spec-file').forEach(function (d) {
        var st = d.getAttribute('data-tvir-spec');
        if (!st || st === 'loading') { res.pending = true; res.loading = true; }
      });
    } catch (e) {}
    try { // D3 transitions: nodes carry __transition while scheduled/running
      var all = doc.querySelectorAll('svg *');
      for (var i = 0; i < all.length && i < 20000; i++) if (all[i].__transition) { res.pending = true; break; }
    } catch (e) {}
    doc.querySelectorAll('iframe, frame').forEach(function (f) { try { if (f.contentWindow && f.contentWindow.document) each(f.contentWindow); } catch (e) {} });
  }
  each(window);
  return res;
})
