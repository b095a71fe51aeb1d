// hooks.js — injected with Page.addScriptToEvaluateOnNewDocument (runs in every frame before any
// page script). Two jobs, both optional for detect.js (which also works without them):
//  1. switch chart animations off at creation time (deterministic screenshots, no waiting);
//  2. record instances that have no global registry (ApexCharts without chart.id, Vega views,
//     vega-embed results) in window.__tvirHooks.
// It must never throw and never change what a chart shows apart from animation.
(function () {
  'use strict';
  if (window.__tvirHooks) return;
  var H = window.__tvirHooks = { apex: [], vegaViews: [], vegaEmbeds: [], errors: [] };
  // No pop-ups: window.open opens nothing (the driver also closes any page that has an opener).
  H.popups = 0;
  try {
    Object.defineProperty(window, 'open', { configurable: false, writable: false,
      value: function () { H.popups++; return null; } });
  } catch (e) { try { window.open = function () { H.popups++; return null; }; } catch (e2) {} }
  // Errors the page's own scripts throw (uncaught, or rejected promises), for the reasons a
  // chart was not drawn: message and place, at most 20.
  H.pageErrors = [];
  function pageError(msg, where) { if (H.pageErrors.length < 20) H.pageErrors.push({ message: String(msg).slice(0, 300), where: where ? String(where).slice(0, 300) : null }); }
  try {
    window.addEventListener('error', function (ev) {
      if (ev && ev.error !== undefined || (ev && ev.message)) pageError(ev.message || (ev.error && ev.error.message) || 'error', ev.filename ? ev.filename + ':' + ev.lineno : null);
    }, true);
    window.addEventListener('unhandledrejection', function (ev) { var r = ev && ev.reason; pageError((r && r.message) || r || 'unhandled rejection', null); });
  } catch (e) {}
  function safe(f) { try { f(); } catch (e) { try { H.errors.push(String(e && e.message || e)); } catch (_) {} } }
  // Handlers of what a reader does (a click, a choice, a tab or a panel shown), for
  // detect.js: a box only such a handler fills is no chart at load. At most 300.
  H.actions = [];
  var ACTIONS = /^(click|dblclick|mousedown|mouseup|pointerdown|pointerup|touchstart|touchend|change|input|submit|keydown|keyup|toggle|shown?\.bs\.(tab|modal|collapse)|shown?|open)$/;
  function noteAction(fn) {
    if (typeof fn === 'function' && H.actions.length < 300 && H.actions.indexOf(fn) < 0) H.actions.push(fn);
  }
  try {
    var add = EventTarget.prototype.addEventListener;
    var wrappedAdd = function (type, fn) {
      try {
        if (ACTIONS.test(String(type))) noteAction(fn);
      } catch (e) {}
      return add.apply(this, arguments);
    };
    Object.defineProperty(EventTarget.prototype, 'addEventListener', { configurable: true, writable: true, value: wrappedAdd });
  } catch (e) {}
  // The ids the page's code looks up before detect.js runs (it sets H.frozen): a box
  // whose id no code asked for at load was not one load-time code tried to draw in.
  // Scripts that failed to load are counted (their code never ran).
  H.lookups = {}; H.lookupCount = 0; H.failedScripts = 0;
  function looked(id) { if (!H.frozen && H.lookupCount < 5000 && typeof id === 'string' && !H.lookups[id]) { H.lookups[id] = 1; H.lookupCount++; } }
  try {
    var byId = Document.prototype.getElementById;
    Document.prototype.getElementById = function (id) { try { looked(String(id)); } catch (e) {} return byId.apply(this, arguments); };
    ['querySelector', 'querySelectorAll'].forEach(function (m) {
      [Document.prototype, Element.prototype].forEach(function (proto) {
        var orig = proto[m];
        proto[m] = function (sel) {
          try { if (typeof sel === 'string' && sel.indexOf('#') >= 0) sel.replace(/#((?:[\w-]|\\.)+)/g, function (_, id) { looked(id.replace(/\\(.)/g, '$1')); }); } catch (e) {}
          return orig.apply(this, arguments);
        };
      });
    });
    window.addEventListener('error', function (ev) { try { if (ev && ev.target && ev.target.localName === 'script') H.failedScripts++; } catch (e) {} }, true);
  } catch (e) {}

  // Trap `window.NAME = lib` (UMD builds assign a global) and run `patch(lib)` once.
  function trap(name, patch) {
    var value, done = false;
    var existing = Object.getOwnPropertyDescriptor(window, name);
    if (existing && !existing.configurable) return;
    try {
      Object.defineProperty(window, name, {
        configurable: true, enumerable: true,
        get: function () { return value; },
        set: function (v) {
          value = v;
          if (!v || done) return;
          // A UMD build may assign an empty namespace first and fill it right after
          // (ECharts does): a patch that finds nothing yet (returns false) runs again
          // once the current script has finished, before any later script.
          var run = function () { safe(function () { var r = patch(value); if (r === false) return; done = true; if (r) value = r; }); };
          run();
          if (!done && typeof queueMicrotask === 'function') queueMicrotask(run);
        }
      });
    } catch (e) { H.errors.push('trap ' + name); }
  }

  // jQuery binds a page's handlers through one dispatcher of its own, which is all
  // addEventListener sees: the page's handlers are taken where they are handed over
  // (`.on`, `.one`, and `.click`, `.bind`, `.delegate`, which call `.on`).
  function jqueryActions(jq) {
    if (!jq || !jq.fn || typeof jq.fn.on !== 'function') return false;
    function note(types, args) {
      try {
        var pairs = [];
        if (types && typeof types === 'object') Object.keys(types).forEach(function (t) { pairs.push([t, types[t]]); });
        else {
          var fn = null;
          for (var i = args.length - 1; i >= 1; i--) if (typeof args[i] === 'function') { fn = args[i]; break; }
          String(types || '').split(/\s+/).forEach(function (t) { pairs.push([t, fn]); });
        }
        pairs.forEach(function (p) {
          var t = p[0];
          if (ACTIONS.test(t) || ACTIONS.test(t.split('.')[0])) noteAction(p[1]);
        });
      } catch (e) {}
    }
    ['on', 'one'].forEach(function (m) {
      var orig = jq.fn[m];
      if (typeof orig !== 'function') return;
      jq.fn[m] = function (types) { note(types, arguments); return orig.apply(this, arguments); };
    });
  }
  trap('jQuery', jqueryActions);

  trap('Chart', function (Chart) {
    if (!Chart.defaults) return false;
    if (Chart.defaults.global) {               // Chart.js 2.x
      Chart.defaults.global.animation = Chart.defaults.global.animation || {};
      Chart.defaults.global.animation.duration = 0;
      Chart.defaults.global.responsiveAnimationDuration = 0;
    } else {                                   // Chart.js 3.x / 4.x
      Chart.defaults.animation = false;
      if (Chart.defaults.transitions && Chart.defaults.transitions.active) Chart.defaults.transitions.active.animation = { duration: 0 };
    }
  });

  trap('echarts', function (echarts) {
    var init = echarts.init;
    if (typeof init !== 'function') return false;
    echarts.init = function () {
      var inst = init.apply(this, arguments);
      safe(function () {
        var setOption = inst.setOption;
        inst.setOption = function (opt) {
          if (opt && typeof opt === 'object' && !Array.isArray(opt)) { try { opt.animation = false; } catch (e) {} }
          return setOption.apply(this, arguments);
        };
      });
      return inst;
    };
  });

  trap('Highcharts', function (Highcharts) {
    if (typeof Highcharts.setOptions !== 'function') return false;
    Highcharts.setOptions({ chart: { animation: false }, plotOptions: { series: { animation: false } } });
  });

  trap('ApexCharts', function (ApexCharts) {
    var proto = ApexCharts && ApexCharts.prototype;
    if (!proto || typeof proto.render !== 'function') return false;
    var render = proto.render;
    proto.render = function () {
      var self = this;
      safe(function () {
        H.apex.push(self);
        var c = self.opts && (self.opts.chart = self.opts.chart || {});
        if (c) { c.animations = c.animations || {}; c.animations.enabled = false; }
      });
      return render.apply(this, arguments);
    };
  });

  trap('vega', function (vega) {
    // The UMD build assigns `window.vega = {}` and fills it afterwards: not there yet, try
    // again once the script has run (returning nothing here gave up for good, and views
    // made with `new vega.View` were never recorded).
    var View = vega && vega.View;
    if (!View || !View.prototype || typeof View.prototype.initialize !== 'function') return false;
    var initialize = View.prototype.initialize;
    View.prototype.initialize = function (el) {
      var self = this;
      safe(function () { H.vegaViews.push({ view: self, el: (typeof el === 'string') ? document.querySelector(el) : el }); });
      return initialize.apply(this, arguments);
    };
    // A data file the view loads (`data: {url}`): the dataflow asks for it once, naming the
    // operator that will hold its rows. The operator keeps the address, so detect.js can
    // tell which marks draw from which file.
    var preload = View.prototype.preload;
    if (typeof preload === 'function') {
      View.prototype.preload = function (target, url) {
        safe(function () { if (target && typeof target === 'object' && typeof url === 'string') target.__tvirUrl = url; });
        return preload.apply(this, arguments);
      };
    }
  });

  trap('vegaEmbed', function (vegaEmbed) {
    // vega-embed's UMD global is a function; the trap stores the wrapper instead.
    var orig = vegaEmbed;
    var wrapped = function (el, spec, opts) {
      var p = orig.apply(this, arguments);
      safe(function () {
        p.then(function (res) {
          H.vegaEmbeds.push({ el: (typeof el === 'string') ? document.querySelector(el) : el, view: res && res.view, spec: res && res.spec });
        }, function () {});
      });
      return p;
    };
    for (var k in orig) { try { wrapped[k] = orig[k]; } catch (e) {} }
    return wrapped; // becomes the value of window.vegaEmbed
  });
})();
