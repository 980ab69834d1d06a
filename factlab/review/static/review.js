// The review layer: accept / reject / revise per claim card, keyboard-driven, decisions POSTed to /api/decisions.
// Keys: j / k next / previous card, a accept, r reject, e revise, s jump to the source chunk, Esc close a form.
(function () {
  var state = JSON.parse(document.getElementById("review-state").textContent);
  var cards = Array.prototype.slice.call(document.querySelectorAll(".claim[data-claim]")).filter(function (el) {
    return (el.dataset.paragraph + "/" + el.dataset.claim) in state.versions;
  });
  var focused = -1;
  var bar = document.createElement("div");
  bar.className = "review-bar";
  bar.innerHTML = '<strong>Review</strong><span id="review-progress"></span><span>reviewer: <b id="review-who"></b></span>' +
    "<span><kbd>j</kbd>/<kbd>k</kbd> move <kbd>a</kbd> accept <kbd>r</kbd> reject <kbd>e</kbd> revise " +
    "<kbd>s</kbd> source</span>";
  document.body.insertBefore(bar, document.body.firstChild);
  document.getElementById("review-who").textContent = state.reviewer;

  function xsrf() {  // the _xsrf cookie the app set with the page, echoed in a header on every write
    var m = document.cookie.match(/(?:^|;\s*)_xsrf=([^;]*)/);
    return m ? decodeURIComponent(m[1]) : "";
  }
  function problem(r) {
    var detail = r.body && r.body.detail;
    if (Array.isArray(detail)) {
      detail = detail.map(function (d) { return (d.loc || []).join(".") + ": " + d.msg; }).join("; ");
    }
    return detail ? String(detail) : r.status + " " + r.statusText;
  }
  function key(el) { return el.dataset.paragraph + "/" + el.dataset.claim; }
  function progress() {
    var n = cards.filter(function (el) { return state.decisions[key(el)]; }).length;
    document.getElementById("review-progress").textContent = n + " / " + cards.length + " decided";
  }
  function show(el) {
    var d = state.decisions[key(el)];
    var status = el.querySelector(".review-status");
    el.classList.remove("decided-accept", "decided-reject", "decided-revise");
    if (!d) { status.textContent = "not decided"; return; }
    el.classList.add("decided-" + d.decision);
    var text = {accept: "accepted", reject: "rejected", revise: "revised"}[d.decision] + " by " + d.reviewer +
      " at " + d.decided_at;
    if (d.revised_label) text += " · label → " + d.revised_label;
    if (d.revised_claim) text += " · claim → “" + d.revised_claim + "”";
    if (d.reason) text += " · reason: " + d.reason;
    if (d.card_version !== state.versions[key(el)]) text += " (on an earlier version of this card)";
    status.textContent = text;
    status.setAttribute("data-decision", d.decision);
  }
  function send(el, body) {
    var error = el.querySelector(".review-error");
    error.textContent = "";
    body.paragraph_id = el.dataset.paragraph;
    body.claim_id = el.dataset.claim;
    body.card_version = state.versions[key(el)];
    return fetch("api/decisions", {method: "POST", credentials: "same-origin",
                                   headers: {"Content-Type": "application/json", "X-XSRF-Token": xsrf()},
                                   body: JSON.stringify(body)})
      .then(function (r) {
        // an answer that is not JSON (a proxy's page, a crash) still reads as its status, never as a SyntaxError
        return r.text().then(function (text) {
          var parsed = null;
          try { parsed = JSON.parse(text); } catch (e) { parsed = null; }
          return {ok: r.ok, status: r.status, statusText: r.statusText, body: parsed};
        });
      })
      .then(function (r) {
        if (!r.ok) { error.textContent = "not saved: " + problem(r); return; }
        state.decisions[key(el)] = r.body;
        var form = el.querySelector(".review-form");
        if (form) form.remove();
        show(el);
        progress();
      })
      .catch(function (e) { error.textContent = "not saved: " + e; });
  }
  function form(el, kind) {
    var old = el.querySelector(".review-form");
    if (old) old.remove();
    var f = document.createElement("form");
    f.className = "review-form";
    var labels = ["", "correct", "wrong", "disputed", "unverifiable"];
    var html = "";
    if (kind === "revise") {
      html += '<label>Claim as it should read<textarea name="revised_claim" rows="2"></textarea></label>';
    }
    html += '<label>Label it should have <select name="revised_label">' + labels.map(function (l) {
      return '<option value="' + l + '">' + (l || "(unchanged)") + "</option>"; }).join("") + "</select></label>";
    html += '<label>Reason<textarea name="reason" rows="2"></textarea></label>';
    html += '<div><button type="submit" class="' + kind + '">Save ' + kind + '</button> ' +
      '<button type="button" class="cancel">Cancel</button></div>';
    f.innerHTML = html;
    if (kind === "revise") f.querySelector("textarea[name=revised_claim]").value =
      el.querySelector(".claim-text").textContent;
    f.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var body = {decision: kind, reason: f.reason.value};
      if (f.revised_label.value) body.revised_label = f.revised_label.value;
      if (kind === "revise" && f.revised_claim.value.trim()) body.revised_claim = f.revised_claim.value.trim();
      send(el, body);
    });
    f.querySelector(".cancel").addEventListener("click", function () { f.remove(); });
    el.querySelector(".review-tools").after(f);
    f.querySelector(kind === "revise" ? "textarea" : "textarea[name=reason]").focus();
  }
  function source(el) {
    var link = el.querySelector('ol.evidence a[href^="#chunk-"]');
    if (!link) return;
    var details = el.querySelector("details");
    if (details) details.open = true;
    var target = document.getElementById(link.getAttribute("href").slice(1));
    if (target) { history.replaceState(null, "", link.getAttribute("href")); target.scrollIntoView({block: "start"}); }
  }
  function focus(i) {
    if (!cards.length) return;
    if (focused >= 0) cards[focused].classList.remove("focused");
    focused = Math.max(0, Math.min(cards.length - 1, i));
    cards[focused].classList.add("focused");
    cards[focused].scrollIntoView({block: "center"});
  }
  cards.forEach(function (el, i) {
    var tools = document.createElement("div");
    tools.className = "review-tools";
    tools.innerHTML = '<button type="button" class="accept">Accept</button>' +
      '<button type="button" class="reject">Reject</button><button type="button" class="revise">Revise</button>' +
      '<button type="button" class="source">Source</button><span class="review-status"></span>' +
      '<span class="review-error"></span>';
    el.appendChild(tools);
    tools.querySelector(".accept").addEventListener("click", function () { focus(i); send(el, {decision: "accept"}); });
    tools.querySelector(".reject").addEventListener("click", function () { focus(i); form(el, "reject"); });
    tools.querySelector(".revise").addEventListener("click", function () { focus(i); form(el, "revise"); });
    tools.querySelector(".source").addEventListener("click", function () { focus(i); source(el); });
    show(el);
  });
  progress();
  document.addEventListener("keydown", function (ev) {
    var tag = (ev.target.tagName || "").toLowerCase();
    if (ev.key === "Escape") { var f = document.querySelector(".review-form"); if (f) f.remove(); return; }
    if (tag === "textarea" || tag === "input" || tag === "select" || ev.metaKey || ev.ctrlKey || ev.altKey) return;
    var el = focused >= 0 ? cards[focused] : null;
    if (ev.key === "j") focus(focused + 1);
    else if (ev.key === "k") focus(focused - 1);
    else if (el && ev.key === "a") send(el, {decision: "accept"});
    else if (el && ev.key === "r") { ev.preventDefault(); form(el, "reject"); }
    else if (el && ev.key === "e") { ev.preventDefault(); form(el, "revise"); }
    else if (el && ev.key === "s") source(el);
    else return;
  });
})();
