// The console's only script (embedded in the binary). On a page of
// something that runs (main#content data-live="true") it asks the same
// address for news every data-refresh milliseconds, replaces the page's
// content when its data-version changed, and shows when it last heard in
// the header's "last updated". Nothing else: no request elsewhere, no
// library.
(function () {
  "use strict";
  var content = document.getElementById("content");
  var updated = document.getElementById("updated");
  if (!content || !updated) {
    return;
  }
  function stamp(when) {
    updated.setAttribute("datetime", when.toISOString());
    updated.textContent = when.toLocaleTimeString();
  }
  stamp(new Date(updated.getAttribute("datetime") || Date.now()));
  if (content.getAttribute("data-live") !== "true") {
    return;
  }
  var period = parseInt(content.getAttribute("data-refresh"), 10) || 2000;
  function poll() {
    fetch(window.location.href, { cache: "no-store", credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (resp) {
        if (!resp.ok) {
          throw new Error("HTTP " + resp.status);
        }
        return resp.text();
      })
      .then(function (text) {
        var next = new DOMParser().parseFromString(text, "text/html").getElementById("content");
        if (next && next.getAttribute("data-version") !== content.getAttribute("data-version")) {
          var fresh = document.importNode(next, true);
          content.replaceWith(fresh);
          content = fresh;
        }
        stamp(new Date());
        if (content.getAttribute("data-live") === "true") {
          window.setTimeout(poll, period);
        }
      })
      .catch(function (err) {
        updated.textContent = updated.textContent.split(" (")[0] + " (no answer: " + err.message + "; asking again)";
        window.setTimeout(poll, period * 2);
      });
  }
  window.setTimeout(poll, period);
})();
