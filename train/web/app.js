// The Cassino page: play against an agent through the server's JSON API (train/serve.py), and step through
// game records. Plain JavaScript, no build step.
"use strict";

const SUITS = { C: "\u2663", D: "\u2666", H: "\u2665", S: "\u2660" };
const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

function cardEl(text, extra = {}) {
  const suit = text.slice(-1);
  const rank = text.slice(0, -1);
  const red = suit === "D" || suit === "H";
  return el(extra.button ? "button" : "span",
    { class: `card ${red ? "red" : "black"}`, "data-card": text, title: text, ...(extra.attrs || {}) },
    `${rank}${SUITS[suit] || suit}`);
}

function prettyMove(text) {  // "capture 3C 5H with 8S" -> suit symbols
  return text.replace(/\b(10|[2-9AJQK])([CDHS])\b/g, (_, r, s) => r + SUITS[s]);
}

function showError(message) {
  const box = $("error");
  box.textContent = message;
  box.hidden = !message;
}

// A JSON request; a string body is sent as it is, with content type `type`.
async function api(method, url, body, type = "application/json") {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    init.headers["Content-Type"] = type;
  }
  const response = await fetch(url, init);
  const text = await response.text();
  let data = null;
  try {
    data = JSON.parse(text);
  } catch (err) {  // a plain-text answer (the server's connection limit: 503)
    if (response.ok) throw err;
  }
  if (!response.ok) throw new Error((data && data.error) || `${response.status} ${response.statusText || text}`);
  return data;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function sideName(info, s, names) {
  return info.sides[s].map((p) => names[p]).join(" + ");
}

// --- the board: seats, table, builds (shared by Play and Replay) ---------------------------------------------------

function renderBoard(container, info, frame, opts = {}) {
  const names = opts.names || info.names;
  container.replaceChildren();
  const seats = el("div", { class: "seats" });
  for (let p = 0; p < info.num_players; p++) {
    const hand = frame.hands[p];
    const box = el("div", { class: `seat${p === frame.to_move ? " to-move" : ""}${p === opts.me ? " me" : ""}`,
      "data-seat": String(p) });
    box.append(el("div", { class: "seat-name" }, `seat ${p}: ${names[p]}${p === frame.dealer ? " · dealer" : ""}`));
    const cards = el("div", { class: "hand" });
    if (hand) {
      for (const c of hand) {
        const clickable = p === opts.me && opts.onCard;
        const node = cardEl(c, { button: clickable, attrs: clickable ? { type: "button" } : {} });
        if (clickable) node.addEventListener("click", () => opts.onCard(c));
        if (opts.selected === c) node.classList.add("selected");
        cards.append(node);
      }
      if (!hand.length) cards.append(el("span", { class: "muted" }, "no cards"));
    } else {
      for (let i = 0; i < frame.hand_counts[p]; i++) cards.append(el("span", { class: "card back" }, "\u00a0"));
      cards.append(el("span", { class: "muted" }, ` ${frame.hand_counts[p]} in hand`));
    }
    box.append(cards);
    const extra = frame.in_play ? ` · in-play ${frame.bonus_points[p]}` : "";
    box.append(el("div", { class: "pile" },
      `captured ${frame.captured[p]} (${frame.spades[p]} \u2660) · sweeps ${frame.sweeps[p]}${extra}`));
    seats.append(box);
  }
  const table = el("div", { class: "table", id: opts.tableId || "" });
  const loose = el("div", { class: "loose" });
  for (const c of frame.loose) loose.append(cardEl(c));
  if (!frame.loose.length) loose.append(el("span", { class: "muted" }, "no loose cards"));
  table.append(el("div", { class: "label" }, "table"), loose);
  const builds = el("div", { class: "builds" });
  for (const b of frame.builds) {
    const node = el("div", { class: "build", "data-value": String(b.value), "data-owner": String(b.owner) });
    node.append(el("div", { class: "build-head" }, `build of ${b.value} · ${names[b.owner]}`));
    const row = el("div", {});
    for (const c of b.cards) row.append(cardEl(c));
    node.append(row);
    builds.append(node);
  }
  table.append(builds);
  const scores = info.sides.map((_, s) => `${sideName(info, s, names)} ${frame.match_scores[s]}`).join(" · ");
  table.append(el("div", { class: "stock" },
    `stock ${frame.stock} · match before this deal: ${scores} (to ${info.target})`));
  container.append(seats, table);
}

function renderScore(container, info, score, names) {
  container.replaceChildren();
  const t = el("table", { class: "score" });
  const head = el("tr", {}, el("th", {}, "item"));
  info.sides.forEach((_, s) => head.append(el("th", {}, sideName(info, s, names))));
  t.append(head);
  const row = (label, values, cls) => {
    const tr = el("tr", { class: cls || "" }, el("td", {}, label));
    values.forEach((v, s) => tr.append(el("td", { "data-side": String(s), class: cls || "" }, String(v))));
    t.append(tr);
  };
  if (score.cards) row("cards taken", score.cards, "count");
  if (score.spades) row("spades taken", score.spades, "count");
  for (const [item, pts] of score.items) row(item.replace(/_/g, " "), pts, "item");
  row("deal points", score.totals, "total");
  if (score.match_totals) row("match total", score.match_totals, "match-total");
  container.append(el("h2", {}, "Score of the deal"), t);
  container.hidden = false;
}

// --- Play ----------------------------------------------------------------------------------------------------------

let options = null;
let game = null;
let selectedCard = null;

function fillSelect(select, values, chosen) {
  select.replaceChildren(...values.map((v) => el("option", { value: String(v), text: String(v) })));
  if (chosen !== undefined) select.value = String(chosen);
}

function updatePlayers() {
  const counts = options.presets[$("preset").value];
  const keep = Number($("num-players").value);
  fillSelect($("num-players"), counts, counts.includes(keep) ? keep : counts[0]);
  updateSeats();
}

function updateSeats() {
  const n = Number($("num-players").value);
  const keep = Number($("seat").value || 0);
  fillSelect($("seat"), [...Array(n).keys()], keep < n ? keep : 0);
}

async function loadOptions() {
  options = await api("GET", "/api/options");
  const d = options.defaults;
  fillSelect($("preset"), Object.keys(options.presets), d.preset);
  fillSelect($("num-players"), options.presets[d.preset], d.num_players);
  updateSeats();
  $("agent-list").replaceChildren(...options.agents.map((a) => el("option", { value: a })));
  $("opponent").value = d.opponent;
  $("play").value = d.play;
}

function statusText(g) {
  if (g.status === "your_turn") return "Your turn: click a move.";
  if (g.status === "agent_turn") {
    const p = g.position.to_move;
    return `seat ${p} (${g.names[p]}) is to move\u2026`;
  }
  if (g.status === "deal_over") return "The deal is over. Next deal when you are ready.";
  if (g.winner !== null && g.winner !== undefined) {
    const mine = g.winner === g.seat % g.sides.length;
    return `The match is over: ${mine ? "you win" : sideName(g, g.winner, g.names) + " wins"}.`;
  }
  return "The deal is over.";
}

function renderProbs(target, moves, probs, chosen, title) {
  const order = probs.map((p, i) => i).sort((a, b) => probs[b] - probs[a]).slice(0, 8);
  const list = el("ol", {});
  for (const i of order) {
    const pct = (100 * probs[i]).toFixed(1);
    const bar = el("span", { class: "bar", style: `width:${Math.max(1, Math.round(probs[i] * 160))}px` });
    list.append(el("li", { class: i === chosen ? "chosen" : "", "data-prob": String(probs[i]) },
      bar, ` ${pct}% ${prettyMove(moves[i].text)}`));
  }
  target.replaceChildren(el("div", { class: "label" }, title), list);
  target.hidden = false;
}

function renderGame(last) {
  const g = game;
  $("game").hidden = false;
  const rules = typeof g.rules === "string" ? g.rules : JSON.stringify(g.rules);
  $("game-head").textContent = `${rules}, ${g.num_players} players · ${g.play === "deal" ? "one deal" : "match to " +
    g.target} · match ${g.match}, deal ${g.deal} · ${g.seed_text === null ? "seed shown when the game is over"
    : "seed " + g.seed_text}${g.values ? " · values: " + g.values : ""}`;
  $("status").textContent = statusText(g);
  $("status").dataset.status = g.status;
  renderBoard($("board"), g, g.position, { me: g.seat, selected: selectedCard, tableId: "table",
    onCard: (c) => { selectedCard = selectedCard === c ? null : c; renderGame(); } });
  const lastMove = last || (g.log.length ? g.log[g.log.length - 1] : null);
  $("last-move").textContent = lastMove ? `${g.names[lastMove.seat]} played: ${prettyMove(lastMove.text)}` : "";
  if (last && last.probability !== null && last.probability !== undefined) {
    // only the move it played: its other moves would show the cards in its hand
    renderProbs($("probs"), [last], [last.probability], 0,
      `${g.names[last.seat]}'s probability for the move it played (it plays its most likely move):`);
  } else if (!last) {
    $("probs").hidden = true;
  }
  const moves = $("moves");
  moves.replaceChildren();
  $("moves-area").hidden = g.status !== "your_turn";
  $("hint").hidden = !g.network;
  for (const m of g.moves) {
    if (selectedCard && m.move.card !== selectedCard) continue;
    moves.append(el("button", { type: "button", class: "move", "data-index": String(m.index),
      onclick: () => playMove(m.index) }, prettyMove(m.text)));
  }
  if (g.score) renderScore($("score"), g, g.score, g.names); else $("score").hidden = true;
  $("next-deal").hidden = g.status !== "deal_over";
  // the record holds the seed, from which every hand follows: offered once the game is over
  $("download").hidden = g.status !== "game_over";
  $("download").href = `/api/games/${g.id}/record`;
  $("download").setAttribute("download", `cassino-${g.id}.jsonl`);
  $("log").replaceChildren(...g.log.map((m) => el("li", {}, `${g.names[m.seat]}: ${prettyMove(m.text)}`)));
}

async function run(action) {
  try {
    showError("");
    await action();
  } catch (err) {
    showError(err.message);
  }
}

// While a game is being dealt the button says so; the first game with a network agent also loads torch and the
// network (seconds), so the note says that too.
async function dealing(action) {
  const button = $("start");
  button.disabled = true;
  button.textContent = "Dealing\u2026";
  if (!warmedUp) $("dealing-note").textContent = "loading the agent (the first game only)\u2026";
  try {
    await action();
  } finally {
    warmedUp = true;
    button.disabled = false;
    button.textContent = "New game";
    $("dealing-note").textContent = "";
  }
}

// The default game is dealt in the background as soon as the page has its options (loading the agent's network
// takes seconds on the first game), so "New game" with the settings unchanged shows it at once.
let prepared = null;  // { text, promise } of the game dealt ahead
let warmedUp = false;

function newGameText() {
  const body = { preset: $("preset").value, num_players: Number($("num-players").value),
    opponent: $("opponent").value.trim(), seat: Number($("seat").value), play: $("play").value };
  return JSON.stringify(body);
}

function prepareDefaultGame() {
  const text = newGameText();
  const promise = api("POST", "/api/games", text);
  prepared = { text, promise };
  promise.then(() => {
    warmedUp = true;
    if (prepared && prepared.promise === promise) $("dealing-note").textContent = "a game is dealt: press New game";
  }, () => {});  // a failure shows when the person starts a game
}

async function agentsMove() {
  const id = game.id;
  while (game && game.id === id && game.status === "agent_turn") {
    await sleep(Number($("speed").value));
    if (!game || game.id !== id) return;
    const probs = $("show-probs").checked && game.network;
    game = await api("POST", `/api/games/${id}/step`, { probabilities: probs });
    renderGame(game.last);
  }
}

function playMove(index) {
  run(async () => {
    selectedCard = null;
    $("moves-area").hidden = true;
    game = await api("POST", `/api/games/${game.id}/move`, { index });
    renderGame();
    await agentsMove();
  });
}

function startGame(event) {
  event.preventDefault();
  run(async () => {
    const seed = $("seed").value.trim();
    let text = newGameText();
    const ahead = prepared;
    prepared = null;  // used once: a second "New game" deals a new one
    if (seed) {  // the digits go into the JSON as typed: a seed up to 2**63 - 1 stays exact (no float rounding)
      if (!/^\d{1,19}$/.test(seed)) throw new Error("seed: expected an integer 0 <= seed < 2**63");
      text = text.slice(0, -1) + `,"seed":${seed.replace(/^0+(?=\d)/, "")}}`;
    }
    selectedCard = null;
    await dealing(async () => {
      let dealt = null;
      if (ahead) {  // wait for the game dealt ahead (one deal at a time); it is the one shown if nothing changed
        dealt = await ahead.promise.catch(() => null);
        if (ahead.text !== text) dealt = null;
      }
      game = dealt || await api("POST", "/api/games", text);
    });
    renderGame();
    await agentsMove();
  });
}

// --- Replay --------------------------------------------------------------------------------------------------------

let recordFile = null;
let replayed = null;
let steps = [];
let stepAt = 0;

async function openRecordFile() {
  const file = $("record-file").files[0];
  if (!file) return;
  await run(async () => {
    recordFile = await api("POST", "/api/records", await file.text(), "application/jsonl");
    $("record-game").replaceChildren(...recordFile.games.map((g) => el("option", { value: String(g.game) },
      `game ${g.game}: ${g.preset} ${g.num_players}p · ${g.seats.join(" / ")} · ${g.deals} deal${g.deals > 1 ? "s" : ""}`)));
    await openRecordGame();
  });
}

async function openRecordGame() {
  await run(async () => {
    replayed = await api("GET", `/api/records/${recordFile.id}/${$("record-game").value}`);
    steps = [];
    replayed.deals.forEach((d, di) => d.frames.forEach((_, fi) => steps.push([di, fi])));
    stepAt = 0;
    $("replay").hidden = false;
    $("r-slider").max = String(steps.length - 1);
    showStep();
  });
}

function showStep() {
  const [di, fi] = steps[stepAt];
  const deal = replayed.deals[di];
  const frame = deal.frames[fi];
  const rules = typeof replayed.rules === "string" ? replayed.rules : JSON.stringify(replayed.rules);
  $("replay-head").textContent = `game ${replayed.game}: ${rules}, ${replayed.num_players} players · seed ` +
    `${replayed.seed_text} · match ${deal.match}, deal ${deal.deal}`;
  $("r-where").textContent = `move ${fi} of ${deal.moves.length} in this deal · position ${stepAt + 1} of ` +
    `${steps.length}`;
  $("r-slider").value = String(stepAt);
  const played = fi > 0 ? deal.moves[fi - 1] : null;
  const next = fi < deal.moves.length ? deal.moves[fi] : null;
  const parts = [];
  if (played) parts.push(`${replayed.names[played.seat]} played: ${prettyMove(played.text)}`);
  if (next) parts.push(`next: ${replayed.names[next.seat]} plays ${prettyMove(next.text)}`);
  else if (deal.match_winner !== null) {
    parts.push(`the deal is over: ${sideName(replayed, deal.match_winner, replayed.names)} wins the match`);
  } else parts.push("the deal is over");
  $("r-move").textContent = parts.join(" \u2014 ");
  renderBoard($("replay-board"), replayed, frame);
  if (!next) renderScore($("replay-score"), replayed, deal.score, replayed.names);
  else $("replay-score").hidden = true;
}

function go(to) {
  if (!steps.length) return;
  stepAt = Math.max(0, Math.min(steps.length - 1, to));
  showStep();
}

// --- wiring --------------------------------------------------------------------------------------------------------

function showPage(name) {
  $("play-page").hidden = name !== "play";
  $("replay-page").hidden = name !== "replay";
  $("tab-play").classList.toggle("active", name === "play");
  $("tab-replay").classList.toggle("active", name === "replay");
  showError("");
}

window.addEventListener("DOMContentLoaded", () => {
  $("tab-play").addEventListener("click", () => showPage("play"));
  $("tab-replay").addEventListener("click", () => showPage("replay"));
  $("preset").addEventListener("change", () => {
    updatePlayers();
    const name = $("preset").value;
    if ($("opponent").value.startsWith("pretrained:")) {
      $("opponent").value = options.pretrained.includes(name) ? `pretrained:${name}` : "advanced";
    }
  });
  $("num-players").addEventListener("change", updateSeats);
  $("new-game").addEventListener("submit", startGame);
  $("next-deal").addEventListener("click", () => run(async () => {
    game = await api("POST", `/api/games/${game.id}/next`, {});
    renderGame();
    await agentsMove();
  }));
  $("hint").addEventListener("click", () => run(async () => {
    const p = await api("GET", `/api/games/${game.id}/probabilities`);
    renderProbs($("probs"), p.moves, p.probabilities, -1, `${game.opponent}'s probabilities for your moves:`);
  }));
  $("record-file").addEventListener("change", openRecordFile);
  $("record-game").addEventListener("change", openRecordGame);
  $("r-first").addEventListener("click", () => go(0));
  $("r-prev").addEventListener("click", () => go(stepAt - 1));
  $("r-next").addEventListener("click", () => go(stepAt + 1));
  $("r-last").addEventListener("click", () => go(steps.length - 1));
  $("r-slider").addEventListener("input", () => go(Number($("r-slider").value)));
  document.addEventListener("keydown", (e) => {
    if ($("replay-page").hidden || e.target.tagName === "INPUT" && e.target.type !== "range") return;
    if (e.key === "ArrowRight") go(stepAt + 1);
    if (e.key === "ArrowLeft") go(stepAt - 1);
  });
  run(async () => {
    await loadOptions();
    prepareDefaultGame();
  });
});
