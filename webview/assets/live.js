// Refreshes the page's <main> in place: asks the same page with ?part=main
// (server-rendered and escaped there) every data-poll ms, skipping while
// the tab is hidden; a 304 means nothing changed.
(function () {
  var main = document.getElementById('live');
  var conn = document.getElementById('conn');
  var every = main && parseInt(main.getAttribute('data-poll'), 10);
  if (!every) return;
  var tag = '';
  function say(text, down) { conn.textContent = text; conn.className = down ? 'conn down' : 'conn'; }
  function tick() {
    if (document.hidden) { setTimeout(tick, every); return; }
    var url = location.pathname + '?part=main';
    fetch(url, { headers: tag ? { 'If-None-Match': tag } : {}, cache: 'no-store' }).then(function (r) {
      if (r.status === 304) return null;
      tag = r.headers.get('ETag') || '';
      return r.text();
    }).then(function (html) {
      if (html !== null) {
        var t = document.createElement('template');
        t.innerHTML = html;
        main.replaceChildren(t.content);
      }
      say('live, updated ' + new Date().toLocaleTimeString(), false);
    }).catch(function () {
      say('disconnected, retrying', true);
    }).finally(function () { setTimeout(tick, every); });
  }
  say('live', false);
  setTimeout(tick, every);
})();
