// tvir summarize: shows the evidence of a report page. A page stores its units
// table and cited sources deflated (base64 in an inert script element) to keep a
// large run's summary folder small; this script, shared by every page, inflates
// each block in place with the browser's own DecompressionStream. The markup it
// inserts was escaped by tvir when the page was written; nothing in it runs.
(function () {
  'use strict';
  var root = document.documentElement;
  var blocks = Array.prototype.slice.call(
    document.querySelectorAll('script[type="application/x-tvir-evidence"]'));
  function fail(why) {
    root.setAttribute('data-evidence', 'failed');
    blocks.forEach(function (el) {
      var note = el.parentNode && el.parentNode.querySelector('.unpacking');
      if (note) note.textContent = 'The units could not be shown here (' + why +
        '). The same evidence is in the report.json named at the top of this page; ' +
        'tvir summarize --format html --html-evidence plain writes pages that need no script.';
    });
  }
  if (!blocks.length) { root.setAttribute('data-evidence', 'shown'); return; }
  if (typeof DecompressionStream !== 'function') {
    fail('this browser has no DecompressionStream: Chrome 80, Firefox 113 or Safari 16.4 and later have it');
    return;
  }
  function inflate(el) {
    var bin = atob(el.textContent.replace(/\s+/g, ''));
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate'));
    return new Response(stream).text().then(function (html) {
      var box = el.parentNode;
      var t = document.createElement('template');
      t.innerHTML = html;
      box.parentNode.replaceChild(t.content, box);
    });
  }
  Promise.all(blocks.map(inflate)).then(function () {
    root.setAttribute('data-evidence', 'shown');
    if (location.hash.length > 1) {
      var target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
      if (target) target.scrollIntoView();
    }
  }, function (e) { fail(String(e && e.message || e)); });
})();
