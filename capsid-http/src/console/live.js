// Capsid console, live (issue 56): the page works without this script. With it, the page
// listens to /console/events, which sends the digest of what the page shows whenever it
// changes, and re-reads the page and swaps its <main> when the digest differs from the one
// the page carries. A form being filled in is never swapped away: the swap waits until no
// field of the page holds typed text.
(function () {
  'use strict';
  if (!window.EventSource || !window.fetch || !window.DOMParser) {
    return;
  }
  var wanted = null;
  var busy = false;
  var timer = null;

  function main() {
    return document.getElementById('console');
  }

  function typing() {
    var m = main();
    if (!m) {
      return false;
    }
    var fields = m.querySelectorAll('input, textarea, select');
    for (var i = 0; i < fields.length; i++) {
      var f = fields[i];
      if (f.type === 'hidden' || f.type === 'submit') {
        continue;
      }
      if (f.tagName === 'SELECT') {
        if (document.activeElement === f) {
          return true;
        }
        continue;
      }
      if (f.value !== f.defaultValue || document.activeElement === f) {
        return true;
      }
    }
    return false;
  }

  function later() {
    if (timer === null) {
      timer = window.setTimeout(function () {
        timer = null;
        refresh();
      }, 2000);
    }
  }

  function refresh() {
    var m = main();
    if (!m || wanted === null || m.getAttribute('data-digest') === wanted) {
      return;
    }
    if (busy || typing()) {
      later();
      return;
    }
    busy = true;
    window
      .fetch(window.location.pathname + window.location.search, {
        credentials: 'same-origin',
        headers: { Accept: 'text/html' },
        cache: 'no-store'
      })
      .then(function (resp) {
        if (resp.status === 401 || resp.status === 403 || resp.redirected) {
          // Signed out: the page stays as it is, and nothing more is asked.
          wanted = null;
          events.close();
          return null;
        }
        if (!resp.ok) {
          throw new Error('console answered ' + resp.status);
        }
        return resp.text();
      })
      .then(function (html) {
        if (html === null) {
          return;
        }
        var fresh = new window.DOMParser()
          .parseFromString(html, 'text/html')
          .getElementById('console');
        var now = main();
        if (fresh && now && !typing()) {
          now.replaceWith(document.importNode(fresh, true));
        } else {
          later();
        }
      })
      .catch(function () {
        later();
      })
      .then(function () {
        busy = false;
      });
  }

  var events = new window.EventSource('/console/events' + window.location.search);
  events.addEventListener('digest', function (e) {
    wanted = e.data;
    refresh();
  });
})();
