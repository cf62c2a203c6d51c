// ipustack profile report. Reads the profile from the page's JSON block and
// draws everything locally: this page makes no network requests.
(function () {
  'use strict';

  const D = JSON.parse(document.getElementById('profile-data').textContent);
  const M = D.meta;
  const S = D.strings;
  const SL = S.map(function (s) { return s.toLowerCase(); });
  const T = M.tiles;
  const CYC = Math.max(1, M.cycles);
  const KINDS = D.kinds; // idle compute exchange sync host
  const IDLE = 0, COMPUTE = 1, EXCHANGE = 2, SYNC = 3, HOST = 4;

  const st = D.steps;
  const N = st.start.length;
  const sStart = Float64Array.from(st.start);
  const sEnd = Float64Array.from(st.end);
  const sKind = Uint8Array.from(st.kind);
  const sPhase = Int32Array.from(st.phase);
  const sKernel = Int32Array.from(st.kernel);
  const sOp = Int32Array.from(st.op);
  const sValue = Int32Array.from(st.value);
  const sReason = Int32Array.from(st.reason);
  const tileStart = Int32Array.from(D.tileStart);
  const stepTile = new Int32Array(N);
  for (let t = 0; t < T; t++) for (let i = tileStart[t]; i < tileStart[t + 1]; i++) stepTile[i] = t;

  const COL = {
    idle: '#eceef2', compute: '#4e79a7', send: '#f28e2b', recv: '#59a14f', both: '#9c55c9',
    xwait: '#c3c8d2', sync: '#e15759', host: '#d4a514', dim: '#dde0e6'
  };
  const KCOL = [COL.idle, COL.compute, COL.both, COL.sync, COL.host];
  const LEGEND = [
    ['compute', COL.compute], ['send', COL.send], ['receive', COL.recv], ['send+receive', COL.both],
    ['exchange, no traffic', COL.xwait], ['sync', COL.sync], ['host', COL.host], ['idle', COL.idle],
    ['filtered out', COL.dim]
  ];

  // Exchange phases: per phase, each tile's windows (absolute cycles).
  const phases = D.phases.map(function (p) {
    const w = { sS: new Float64Array(T).fill(-1), sE: new Float64Array(T), rS: new Float64Array(T).fill(-1), rE: new Float64Array(T),
      sB: new Float64Array(T), rB: new Float64Array(T) };
    let senders = 0, receivers = 0, maxS = 0, maxR = 0;
    for (let j = 0; j + 6 < p.windows.length; j += 7) {
      const t = p.windows[j];
      if (t >= T) continue;
      const a = p.windows;
      if (a[j + 2] > a[j + 1]) { w.sS[t] = p.start + a[j + 1]; w.sE[t] = p.start + a[j + 2]; senders++; }
      if (a[j + 4] > a[j + 3]) { w.rS[t] = p.start + a[j + 3]; w.rE[t] = p.start + a[j + 4]; receivers++; }
      w.sB[t] = a[j + 5]; w.rB[t] = a[j + 6];
      maxS = Math.max(maxS, a[j + 5]); maxR = Math.max(maxR, a[j + 6]);
    }
    return { p: p, w: w, senders: senders, receivers: receivers, maxS: maxS, maxR: maxR };
  });
  const phaseById = new Map();
  phases.forEach(function (x) { phaseById.set(x.p.id, x); });

  // ---------- helpers
  const $ = function (id) { return document.getElementById(id); };
  function fmt(n) { return Math.round(n).toLocaleString('en-US'); }
  function short(n) {
    n = Math.round(n);
    if (Math.abs(n) >= 1e6) return (n / 1e6).toFixed(n % 1e6 === 0 ? 0 : 2) + 'M';
    if (Math.abs(n) >= 1e4) return (n / 1e3).toFixed(n % 1e3 === 0 ? 0 : 1) + 'k';
    return String(n);
  }
  function us(c) { return M.clockHz ? (c / M.clockHz * 1e6).toFixed(2) + ' \u00b5s' : ''; }
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) { return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]; });
  }
  function el(tag, attrs, html) {
    const e = document.createElement(tag);
    if (attrs) for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (html !== undefined) e.innerHTML = html;
    return e;
  }
  function niceStep(x) {
    const p = Math.pow(10, Math.floor(Math.log10(Math.max(x, 1e-9))));
    const f = x / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
  }
  const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  function ramp(v) {
    v = Math.max(0, Math.min(1, v)) * (VIRIDIS.length - 1);
    const i = Math.min(VIRIDIS.length - 2, Math.floor(v)), f = v - i, a = VIRIDIS[i], b = VIRIDIS[i + 1];
    return 'rgb(' + Math.round(a[0] + (b[0] - a[0]) * f) + ',' + Math.round(a[1] + (b[1] - a[1]) * f) + ',' + Math.round(a[2] + (b[2] - a[2]) * f) + ')';
  }
  function kindLabel(i) {
    const k = sKind[i];
    if (k !== EXCHANGE) return KINDS[k];
    const x = phaseById.get(sPhase[i]), t = stepTile[i];
    if (!x) return 'exchange';
    const s = x.w.sS[t] >= 0, r = x.w.rS[t] >= 0;
    return s && r ? 'exchange (send+receive)' : s ? 'exchange (send)' : r ? 'exchange (receive)' : 'exchange (no traffic)';
  }

  // ---------- filters and view
  const F = { kinds: new Set([0, 1, 2, 3, 4]), kernel: -1, op: -1, phase: null, search: '', tlo: 0, thi: T };
  const V = { c0: 0, c1: CYC, t0: 0, t1: T };
  const match = new Uint8Array(N);
  let matched = 0;
  let selected = -1;
  const R = { ready: false, openMs: 0, stats: { rowsDrawn: 0, idleRows: 0, stepsDrawn: 0, matched: 0, drawMs: 0 }, state: { V: V, F: F } };
  window.ipuReport = R;

  function recompute() {
    const q = F.search.trim().toLowerCase();
    let hit = null;
    if (q) {
      hit = new Uint8Array(S.length);
      for (let j = 0; j < S.length; j++) if (SL[j].indexOf(q) >= 0) hit[j] = 1;
    }
    const kindHit = KINDS.map(function (k) { return q !== '' && k.indexOf(q) >= 0; });
    matched = 0;
    for (let i = 0; i < N; i++) {
      const t = stepTile[i];
      let m = F.kinds.has(sKind[i]) && t >= F.tlo && t < F.thi &&
        (F.kernel < 0 || sKernel[i] === F.kernel) && (F.op < 0 || sOp[i] === F.op) &&
        (F.phase === null || sPhase[i] === F.phase);
      if (m && hit) m = hit[sKernel[i]] || hit[sOp[i]] || hit[sValue[i]] || hit[sReason[i]] || kindHit[sKind[i]];
      match[i] = m ? 1 : 0;
      if (m) matched++;
    }
    R.stats.matched = matched;
    $('matches').textContent = fmt(matched) + ' of ' + fmt(N) + ' steps match';
  }

  // ---------- canvases
  const cvT = $('timeline'), cvA = $('axis'), cvG = $('gutter'), cvO = $('overview');
  const ctxT = cvT.getContext('2d', { alpha: false }), ctxA = cvA.getContext('2d'), ctxG = cvG.getContext('2d'), ctxO = cvO.getContext('2d');
  let rowPx = 1, overviewImg = null;

  function resize(cv, w, h) {
    if (cv.width !== w) cv.width = w;
    if (cv.height !== h) cv.height = h;
  }

  // lower bound: first step of [a,b) ending after c (steps of a tile are
  // ordered and do not overlap, so ends are ordered too).
  function firstAfter(a, b, c) {
    while (a < b) {
      const m = (a + b) >> 1;
      if (sEnd[m] <= c) a = m + 1; else b = m;
    }
    return a;
  }

  let last = '';
  function fill(ctx, color, x0, y, x1, h) {
    if (color !== last) { ctx.fillStyle = color; last = color; }
    ctx.fillRect(x0, y, Math.max(1, x1 - x0), h);
  }

  function drawTimeline() {
    const t0 = performance.now();
    const dpr = window.devicePixelRatio || 1;
    const cssW = Math.max(50, cvT.clientWidth), cssH = Math.max(50, cvT.clientHeight);
    const rows = V.t1 - V.t0;
    const bw = Math.round(cssW * dpr);
    rowPx = rows >= cssH * dpr ? 1 : Math.max(1, Math.floor(cssH * dpr / rows));
    const bh = rows * rowPx;
    resize(cvT, bw, bh);
    const ctx = ctxT;
    last = '';
    fill(ctx, COL.idle, 0, 0, bw, bh);
    const c0 = V.c0, span = V.c1 - V.c0, sx = bw / span;
    const gap = rowPx >= 4 ? 1 : 0, h = rowPx - gap;
    // Every tile in view is a row: an idle tile (no steps) is a row of
    // the idle colour (the background fill), counted in rowsDrawn and in
    // idleRows.
    let rowsDrawn = 0, idleRows = 0, stepsDrawn = 0;
    for (let t = V.t0; t < V.t1; t++) {
      const y = (t - V.t0) * rowPx;
      rowsDrawn++;
      const b = tileStart[t + 1];
      if (b === tileStart[t]) { idleRows++; fill(ctx, COL.idle, 0, y, bw, h); continue; }
      for (let i = firstAfter(tileStart[t], b, c0); i < b; i++) {
        const s = sStart[i];
        if (s >= V.c1) break;
        const x0 = (s - c0) * sx, x1 = (sEnd[i] - c0) * sx;
        if (!match[i]) { fill(ctx, COL.dim, x0, y, x1, h); continue; }
        stepsDrawn++;
        const k = sKind[i];
        if (k !== EXCHANGE) { fill(ctx, KCOL[k], x0, y, x1, h); continue; }
        fill(ctx, COL.xwait, x0, y, x1, h);
        const x = phaseById.get(sPhase[i]);
        if (!x) continue;
        const w = x.w;
        const hs = w.sS[t] >= 0, hr = w.rS[t] >= 0;
        if (hs) fill(ctx, COL.send, (w.sS[t] - c0) * sx, y, (w.sE[t] - c0) * sx, h);
        if (hr) fill(ctx, COL.recv, (w.rS[t] - c0) * sx, y, (w.rE[t] - c0) * sx, h);
        if (hs && hr) {
          const a = Math.max(w.sS[t], w.rS[t]), e = Math.min(w.sE[t], w.rE[t]);
          if (e > a) fill(ctx, COL.both, (a - c0) * sx, y, (e - c0) * sx, h);
        }
      }
    }
    if (selected >= 0) {
      const t = stepTile[selected];
      if (t >= V.t0 && t < V.t1) {
        const x0 = (sStart[selected] - c0) * sx, x1 = (sEnd[selected] - c0) * sx;
        const y = (t - V.t0) * rowPx;
        const pad = Math.max(2, Math.ceil(bh / cssH * 3));
        ctx.strokeStyle = '#111';
        ctx.lineWidth = Math.max(1, Math.ceil(bh / cssH));
        ctx.strokeRect(x0 - 1, y - pad, Math.max(3, x1 - x0 + 2), rowPx + 2 * pad);
      }
    }
    cvT.dataset.rowsDrawn = String(rowsDrawn);
    cvT.dataset.idleRows = String(idleRows);
    R.stats.rowsDrawn = rowsDrawn;
    R.stats.idleRows = idleRows;
    R.stats.stepsDrawn = stepsDrawn;
    drawAxis(cssW, dpr);
    drawGutter(cssH, dpr);
    drawOverview();
    R.stats.drawMs = performance.now() - t0;
  }

  function drawAxis(cssW, dpr) {
    resize(cvA, Math.round(cssW * dpr), Math.round(22 * dpr));
    const ctx = ctxA;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssW, 22);
    ctx.fillStyle = '#6b7280';
    ctx.strokeStyle = '#9aa1ad';
    ctx.font = '11px system-ui, sans-serif';
    const span = V.c1 - V.c0, step = niceStep(span / Math.max(1, cssW / 90));
    ctx.beginPath();
    for (let c = Math.ceil(V.c0 / step) * step; c <= V.c1; c += step) {
      const x = (c - V.c0) / span * cssW;
      ctx.moveTo(x + 0.5, 14); ctx.lineTo(x + 0.5, 22);
      ctx.fillText(short(c), Math.min(x + 2, cssW - 40), 11);
    }
    ctx.stroke();
  }

  function drawGutter(cssH, dpr) {
    resize(cvG, Math.round(52 * dpr), Math.round(cssH * dpr));
    const ctx = ctxG;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, 52, cssH);
    ctx.fillStyle = '#6b7280';
    ctx.font = '11px system-ui, sans-serif';
    ctx.textAlign = 'right';
    const rows = V.t1 - V.t0, step = Math.max(1, niceStep(rows / Math.max(1, cssH / 16)));
    for (let t = Math.ceil(V.t0 / step) * step; t < V.t1; t += step) {
      const y = (t - V.t0 + 0.5) / rows * cssH;
      ctx.fillText('tile ' + t, 48, Math.min(cssH - 2, Math.max(9, y + 4)));
    }
  }

  function buildOverview(w, h) {
    const off = document.createElement('canvas');
    off.width = w; off.height = h;
    const ctx = off.getContext('2d', { alpha: false });
    last = '';
    fill(ctx, COL.idle, 0, 0, w, h);
    const sx = w / CYC;
    for (let t = 0; t < T; t++) {
      const y = Math.floor(t * h / T), y1 = Math.max(y + 1, Math.floor((t + 1) * h / T));
      for (let i = tileStart[t]; i < tileStart[t + 1]; i++) {
        const k = sKind[i];
        fill(ctx, k === EXCHANGE ? COL.both : KCOL[k], sStart[i] * sx, y, sEnd[i] * sx, y1 - y);
      }
    }
    return off;
  }

  function drawOverview() {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.round(Math.max(50, cvO.clientWidth) * dpr), h = Math.round(56 * dpr);
    resize(cvO, w, h);
    if (!overviewImg || overviewImg.width !== w || overviewImg.height !== h) overviewImg = buildOverview(w, h);
    const ctx = ctxO;
    ctx.drawImage(overviewImg, 0, 0);
    const x0 = V.c0 / CYC * w, x1 = V.c1 / CYC * w, y0 = V.t0 / T * h, y1 = V.t1 / T * h;
    ctx.fillStyle = 'rgba(255,255,255,0.55)';
    ctx.fillRect(0, 0, w, y0); ctx.fillRect(0, y1, w, h - y1);
    ctx.fillRect(0, y0, x0, y1 - y0); ctx.fillRect(x1, y0, w - x1, y1 - y0);
    ctx.strokeStyle = '#111';
    ctx.lineWidth = Math.max(1, dpr);
    ctx.strokeRect(x0 + 0.5, y0 + 0.5, Math.max(2, x1 - x0 - 1), Math.max(2, y1 - y0 - 1));
  }

  let pending = false;
  function redraw() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; drawTimeline(); });
  }

  // ---------- view changes
  function clampView() {
    const span = Math.min(CYC, Math.max(20, V.c1 - V.c0));
    V.c0 = Math.max(0, Math.min(CYC - span, V.c0));
    V.c1 = V.c0 + span;
    const lo = F.tlo, hi = F.thi;
    const rows = Math.min(hi - lo, Math.max(1, Math.round(V.t1 - V.t0)));
    V.t0 = Math.max(lo, Math.min(hi - rows, Math.round(V.t0)));
    V.t1 = V.t0 + rows;
  }
  function zoomCycles(f, at) {
    const c = at === undefined ? (V.c0 + V.c1) / 2 : at;
    V.c0 = c - (c - V.c0) * f; V.c1 = c + (V.c1 - c) * f;
    clampView(); redraw();
  }
  function zoomTiles(f, at) {
    const t = at === undefined ? (V.t0 + V.t1) / 2 : at;
    const rows = Math.max(1, Math.round((V.t1 - V.t0) * f));
    V.t0 = Math.round(t - (t - V.t0) * rows / (V.t1 - V.t0)); V.t1 = V.t0 + rows;
    clampView(); redraw();
  }

  function pos(ev) {
    const r = cvT.getBoundingClientRect();
    const fx = (ev.clientX - r.left) / r.width, fy = (ev.clientY - r.top) / r.height;
    return { fx: fx, fy: fy, t: Math.min(V.t1 - 1, Math.max(V.t0, V.t0 + Math.floor(fy * (V.t1 - V.t0)))), c: V.c0 + fx * (V.c1 - V.c0), cpp: (V.c1 - V.c0) / r.width };
  }
  // stepAt is the step of tile t at cycle c, or the nearest within tol
  // cycles; -1 if none (idle).
  function stepAt(t, c, tol) {
    const a = tileStart[t], b = tileStart[t + 1];
    const i = firstAfter(a, b, c);
    if (i < b && sStart[i] <= c) return i;
    let best = -1, d = tol;
    if (i < b && sStart[i] - c <= d) { best = i; d = sStart[i] - c; }
    if (i > a && c - sEnd[i - 1] <= d) best = i - 1;
    return best;
  }
  function gapAround(t, c) {
    const a = tileStart[t], b = tileStart[t + 1];
    const i = firstAfter(a, b, c);
    return [i > a ? sEnd[i - 1] : 0, i < b ? sStart[i] : CYC];
  }

  // ---------- tooltip
  const tip = $('tooltip');
  function showTip(ev, text) {
    tip.textContent = text;
    tip.style.display = 'block';
    const x = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    const y = ev.clientY + 16 + tip.offsetHeight > window.innerHeight ? ev.clientY - tip.offsetHeight - 10 : ev.clientY + 16;
    tip.style.left = x + 'px'; tip.style.top = y + 'px';
  }
  function hideTip() { tip.style.display = 'none'; }
  function stepText(i) {
    const lines = ['tile ' + stepTile[i] + ' \u00b7 ' + kindLabel(i)];
    if (S[sKernel[i]]) lines.push('kernel ' + S[sKernel[i]]);
    if (S[sOp[i]]) lines.push('operation ' + S[sOp[i]]);
    if (S[sValue[i]]) lines.push(S[sValue[i]]);
    lines.push('[' + fmt(sStart[i]) + ', ' + fmt(sEnd[i]) + ') = ' + fmt(sEnd[i] - sStart[i]) + ' cycles');
    return lines.join('\n');
  }

  // ---------- details panel
  const details = $('details');
  function dl(rows) {
    return '<dl>' + rows.filter(function (r) { return r[1] !== '' && r[1] !== undefined; })
      .map(function (r) { return '<dt>' + esc(r[0]) + '</dt><dd>' + (r[2] ? r[1] : esc(r[1])) + '</dd>'; }).join('') + '</dl>';
  }
  function showStep(i) {
    const t = stepTile[i], k = sKind[i];
    const rows = [
      ['tile', String(t)], ['kind', kindLabel(i)], ['kernel', S[sKernel[i]]], ['operation', S[sOp[i]]],
      ['value', S[sValue[i]]], ['reason', S[sReason[i]]],
      ['start', fmt(sStart[i])], ['end', fmt(sEnd[i])],
      ['cycles', fmt(sEnd[i] - sStart[i]) + (M.clockHz ? ' (' + us(sEnd[i] - sStart[i]) + ')' : '')]
    ];
    const x = k === EXCHANGE ? phaseById.get(sPhase[i]) : null;
    if (x) {
      const p = x.p, w = x.w;
      rows.push(['phase', p.id + ' ' + p.name], ['schedule', p.schedule], ['horizon', fmt(p.horizon)],
        ['lower bound', fmt(p.bound) + ' (gap ' + fmt(p.horizon - p.bound) + ')']);
      if (w.sS[t] >= 0) rows.push(['send window', '[' + fmt(w.sS[t] - p.start) + ', ' + fmt(w.sE[t] - p.start) + ') ' + fmt(w.sB[t]) + ' B']);
      if (w.rS[t] >= 0) rows.push(['receive window', '[' + fmt(w.rS[t] - p.start) + ', ' + fmt(w.rE[t] - p.start) + ') ' + fmt(w.rB[t]) + ' B']);
    }
    details.innerHTML = '<h2>Step</h2>' + dl(rows) + tileBlock(t);
    details.dataset.step = String(i);
  }
  function tileBlock(t) {
    let busy = 0, n = 0;
    for (let i = tileStart[t]; i < tileStart[t + 1]; i++) {
      n++;
      if (sKind[i] === COMPUTE || sKind[i] === EXCHANGE || sKind[i] === HOST) busy += sEnd[i] - sStart[i];
    }
    const m = D.memory, a = m.tileStart[t], b = m.tileStart[t + 1];
    let rows = '';
    let used = 0, total = 0;
    for (let j = a; j < b; j++) {
      total += m.size[j];
      if (D.segKinds[m.kind[j]] !== 'free') used += m.size[j];
      rows += '<tr><td>' + esc(D.segKinds[m.kind[j]] || '?') + '</td><td>0x' + m.address[j].toString(16) + '</td><td>' + fmt(m.size[j]) + '</td><td>' + esc(S[m.name[j]]) + '</td></tr>';
    }
    return '<h2 style="margin-top:10px">Tile ' + t + '</h2>' +
      dl([['steps', String(n)], ['busy', fmt(busy) + ' cycles (' + (100 * busy / CYC).toFixed(1) + '%)'],
        ['memory used', total ? fmt(used) + ' of ' + fmt(total) + ' B (' + (100 * used / total).toFixed(1) + '%)' : '']]) +
      (rows ? '<table><tr><th>segment</th><th>address</th><th>bytes</th><th>name</th></tr>' + rows + '</table>' : '');
  }
  function showGap(t, c) {
    const g = gapAround(t, c);
    details.innerHTML = '<h2>Idle</h2>' + dl([['tile', String(t)], ['from', fmt(g[0])], ['to', fmt(g[1])], ['cycles', fmt(g[1] - g[0])]]) + tileBlock(t);
    details.dataset.step = '';
  }
  function showKernel(kernel) {
    const ops = new Map();
    let steps = 0, work = 0;
    const tiles = new Set();
    for (let i = 0; i < N; i++) {
      if (sKernel[i] !== kernel || !match[i]) continue;
      steps++; work += sEnd[i] - sStart[i]; tiles.add(stepTile[i]);
      const o = ops.get(sOp[i]) || { steps: 0, work: 0 };
      o.steps++; o.work += sEnd[i] - sStart[i];
      ops.set(sOp[i], o);
    }
    let rows = '';
    Array.from(ops.entries()).sort(function (a, b) { return b[1].work - a[1].work; }).forEach(function (e) {
      rows += '<tr><td>' + esc(S[e[0]] || '(none)') + '</td><td>' + fmt(e[1].steps) + '</td><td>' + fmt(e[1].work) + '</td></tr>';
    });
    details.innerHTML = '<h2>Kernel ' + esc(S[kernel]) + '</h2>' +
      dl([['steps', fmt(steps)], ['tiles', fmt(tiles.size)], ['work', fmt(work) + ' cycles']]) +
      '<h3>Operations</h3><table><tr><th>operation</th><th>steps</th><th>work</th></tr>' + rows + '</table>' +
      '<p class="muted">Click a step for its details.</p>';
    details.dataset.step = '';
  }
  function select(i) {
    selected = i;
    if (i >= 0) showStep(i);
    redraw();
  }

  // ---------- timeline mouse
  let drag = null;
  cvT.addEventListener('mousedown', function (ev) {
    drag = { x: ev.clientX, y: ev.clientY, c0: V.c0, c1: V.c1, t0: V.t0, t1: V.t1, moved: false };
    ev.preventDefault();
  });
  window.addEventListener('mousemove', function (ev) {
    if (drag) {
      const r = cvT.getBoundingClientRect();
      const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      if (drag.moved) {
        const dc = dx / r.width * (drag.c1 - drag.c0), dt = dy / r.height * (drag.t1 - drag.t0);
        V.c0 = drag.c0 - dc; V.c1 = drag.c1 - dc;
        V.t0 = drag.t0 - dt; V.t1 = drag.t1 - dt;
        clampView(); redraw();
      }
      hideTip();
      return;
    }
    if (ev.target !== cvT) return;
    const p = pos(ev);
    const i = stepAt(p.t, p.c, 3 * p.cpp);
    if (i >= 0) showTip(ev, stepText(i));
    else {
      const g = gapAround(p.t, p.c);
      showTip(ev, 'tile ' + p.t + ' \u00b7 idle\n[' + fmt(g[0]) + ', ' + fmt(g[1]) + ') = ' + fmt(g[1] - g[0]) + ' cycles');
    }
  });
  window.addEventListener('mouseup', function (ev) {
    if (!drag) return;
    const d = drag;
    drag = null;
    if (d.moved || ev.target !== cvT) return;
    const p = pos(ev);
    const i = stepAt(p.t, p.c, 3 * p.cpp);
    if (i >= 0) select(i);
    else { selected = -1; showGap(p.t, p.c); redraw(); }
  });
  cvT.addEventListener('mouseleave', hideTip);
  cvT.addEventListener('wheel', function (ev) {
    ev.preventDefault();
    const p = pos(ev), f = ev.deltaY > 0 ? 1.25 : 0.8;
    if (ev.shiftKey) zoomTiles(f, V.t0 + p.fy * (V.t1 - V.t0));
    else zoomCycles(f, p.c);
  }, { passive: false });
  cvT.addEventListener('dblclick', function () { resetView(); });

  // overview: click or drag to centre the view there.
  let odrag = false;
  function overviewMove(ev) {
    const r = cvO.getBoundingClientRect();
    const c = (ev.clientX - r.left) / r.width * CYC, t = (ev.clientY - r.top) / r.height * T;
    const span = V.c1 - V.c0, rows = V.t1 - V.t0;
    V.c0 = c - span / 2; V.c1 = c + span / 2;
    V.t0 = t - rows / 2; V.t1 = V.t0 + rows;
    clampView(); redraw();
  }
  cvO.addEventListener('mousedown', function (ev) { odrag = true; overviewMove(ev); ev.preventDefault(); });
  window.addEventListener('mousemove', function (ev) { if (odrag) overviewMove(ev); });
  window.addEventListener('mouseup', function () { odrag = false; });

  // ---------- controls
  function uniqueStrings(col) {
    const seen = new Set();
    for (let i = 0; i < N; i++) if (col[i] > 0) seen.add(col[i]);
    return Array.from(seen).sort(function (a, b) { return S[a] < S[b] ? -1 : S[a] > S[b] ? 1 : 0; });
  }
  const kernels = uniqueStrings(sKernel), ops = uniqueStrings(sOp);
  const fKernel = $('f-kernel'), fOp = $('f-op'), fPhase = $('f-phase'), fSearch = $('f-search'), fTlo = $('f-tlo'), fThi = $('f-thi');
  kernels.forEach(function (j) { fKernel.appendChild(el('option', { value: S[j] }, esc(S[j]))); });
  ops.forEach(function (j) { fOp.appendChild(el('option', { value: S[j] }, esc(S[j]))); });
  phases.forEach(function (x) { fPhase.appendChild(el('option', { value: String(x.p.id) }, esc(x.p.id + ' ' + x.p.name))); });
  fTlo.value = '0'; fThi.value = String(T); fTlo.max = String(T - 1); fThi.max = String(T);
  const kindBoxes = [];
  [COMPUTE, EXCHANGE, SYNC, HOST].forEach(function (k) {
    const lab = el('label', { title: 'show ' + KINDS[k] + ' steps' });
    const cb = el('input', { type: 'checkbox', id: 'f-kind-' + KINDS[k] });
    cb.checked = true;
    cb.addEventListener('change', function () {
      if (cb.checked) F.kinds.add(k); else F.kinds.delete(k);
      apply();
    });
    kindBoxes[k] = cb;
    lab.appendChild(cb);
    lab.appendChild(document.createTextNode(' ' + KINDS[k]));
    $('f-kinds').appendChild(lab);
  });
  LEGEND.forEach(function (l) {
    $('legend').appendChild(el('span', null, '<span class="sw" style="background:' + l[1] + '"></span>' + esc(l[0])));
  });

  function strIndex(s) { return s === '' ? -1 : S.indexOf(s); }
  function apply() {
    recompute();
    if (selected >= 0 && !match[selected]) selected = -1;
    if (F.kernel >= 0 && selected < 0) showKernel(F.kernel);
    redraw();
  }
  fKernel.addEventListener('change', function () { F.kernel = strIndex(fKernel.value); apply(); });
  fOp.addEventListener('change', function () { F.op = strIndex(fOp.value); apply(); });
  fPhase.addEventListener('change', function () {
    F.phase = fPhase.value === '' ? null : Number(fPhase.value);
    const x = F.phase === null ? null : phaseById.get(F.phase);
    if (x) {
      const m = Math.max(50, x.p.horizon * 0.15);
      V.c0 = x.p.start - m; V.c1 = x.p.start + x.p.horizon + m;
      clampView();
    }
    apply();
  });
  let searchTimer = 0;
  fSearch.addEventListener('input', function () {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(function () { F.search = fSearch.value; apply(); }, 120);
  });
  function tileRange() {
    let lo = Math.floor(Number(fTlo.value)), hi = Math.floor(Number(fThi.value));
    if (!isFinite(lo) || lo < 0) lo = 0;
    if (!isFinite(hi) || hi > T || hi <= 0) hi = T;
    lo = Math.min(lo, T - 1);
    if (hi <= lo) hi = lo + 1;
    F.tlo = lo; F.thi = hi;
    V.t0 = lo; V.t1 = hi;
    clampView();
    apply();
  }
  fTlo.addEventListener('change', tileRange);
  fThi.addEventListener('change', tileRange);
  $('b-zoomin').addEventListener('click', function () { zoomCycles(0.5); });
  $('b-zoomout').addEventListener('click', function () { zoomCycles(2); });
  $('b-reset').addEventListener('click', function () { resetAll(); });
  function resetView() { V.c0 = 0; V.c1 = CYC; V.t0 = F.tlo; V.t1 = F.thi; clampView(); redraw(); }
  function resetAll() {
    F.kinds = new Set([0, 1, 2, 3, 4]); F.kernel = -1; F.op = -1; F.phase = null; F.search = ''; F.tlo = 0; F.thi = T;
    R.state.F = F;
    kindBoxes.forEach(function (cb) { if (cb) cb.checked = true; });
    fKernel.value = ''; fOp.value = ''; fPhase.value = ''; fSearch.value = ''; fTlo.value = '0'; fThi.value = String(T);
    selected = -1;
    details.innerHTML = '<h2>Details</h2><p class="muted">Click a step in the timeline, a tile in a heatmap or a row of a table.</p>';
    recompute();
    resetView();
  }
  // setFilter is used by the summary and phase tables.
  function setFilter(kind, kernel, op, phase) {
    F.kinds = new Set(kind === null ? [0, 1, 2, 3, 4] : [kind]);
    kindBoxes.forEach(function (cb, k) { if (cb) cb.checked = F.kinds.has(k); });
    F.kernel = kernel === undefined ? -1 : kernel;
    F.op = op === undefined ? -1 : op;
    fKernel.value = F.kernel >= 0 ? S[F.kernel] : '';
    fOp.value = F.op >= 0 ? S[F.op] : '';
    if (phase !== undefined) { fPhase.value = phase === null ? '' : String(phase); fPhase.dispatchEvent(new Event('change')); return; }
    apply();
  }

  // ---------- summary tree: kind -> kernel -> operation
  function buildSummary() {
    const root = new Map();
    let total = 0;
    function node(map, key) {
      let n = map.get(key);
      if (!n) { n = { work: 0, steps: 0, tiles: 0, lastTile: -1, kids: new Map() }; map.set(key, n); }
      return n;
    }
    function add(n, t, c) { n.work += c; n.steps++; if (n.lastTile !== t) { n.tiles++; n.lastTile = t; } }
    for (let t = 0; t < T; t++) {
      let busy = 0;
      for (let i = tileStart[t]; i < tileStart[t + 1]; i++) {
        const c = sEnd[i] - sStart[i];
        busy += c;
        const a = node(root, sKind[i]), b = node(a.kids, sKernel[i]), o = node(b.kids, sOp[i]);
        add(a, t, c); add(b, t, c); add(o, t, c);
      }
      if (CYC > busy) add(node(root, IDLE), t, CYC - busy);
      total += CYC;
    }
    const tb = el('table', { class: 'tree' });
    tb.innerHTML = '<tr><th>kind / kernel / operation</th><th></th><th>work cycles</th><th>%</th><th>steps</th><th>tiles</th></tr>';
    function sorted(map) { return Array.from(map.entries()).sort(function (a, b) { return b[1].work - a[1].work; }); }
    function row(level, label, n, onclick) {
      const tr = el('tr', { class: 'click l' + level });
      const pct = 100 * n.work / total;
      tr.innerHTML = '<td>' + esc(label) + '</td><td style="width:120px;text-align:left"><span class="bar" style="width:' +
        Math.max(1, Math.round(pct * 1.2)) + 'px;opacity:' + (1 - level * 0.25) + '"></span></td><td>' + fmt(n.work) +
        '</td><td>' + pct.toFixed(1) + '</td><td>' + fmt(n.steps) + '</td><td>' + fmt(n.tiles) + '</td>';
      tr.addEventListener('click', onclick);
      tb.appendChild(tr);
    }
    sorted(root).forEach(function (ka) {
      const k = ka[0];
      row(0, KINDS[k], ka[1], function () { setFilter(k === IDLE ? null : k); });
      if (k === IDLE) return;
      sorted(ka[1].kids).forEach(function (kb) {
        const kern = kb[0];
        row(1, kern > 0 ? S[kern] : '(no kernel)', kb[1], function () { setFilter(k, kern > 0 ? kern : -1); });
        sorted(kb[1].kids).forEach(function (kc) {
          const op = kc[0];
          row(2, op > 0 ? S[op] : '(no operation)', kc[1], function () { setFilter(k, kern > 0 ? kern : -1, op > 0 ? op : -1); });
        });
      });
    });
    $('summary').appendChild(tb);
  }

  // ---------- heatmaps
  const HC = T > 64 ? 64 : Math.max(1, Math.ceil(Math.sqrt(T))), HR = Math.ceil(T / HC), CELL = T > 2048 ? 4 : 7;
  // heatmap colours each tile by its value between the smallest and the
  // largest over all tiles, so the differences between tiles show.
  function heatmap(cv, scaleEl, values, unit, label) {
    let lo = Infinity, max = 0;
    for (let t = 0; t < T; t++) { lo = Math.min(lo, values[t]); max = Math.max(max, values[t]); }
    if (!(lo < max)) lo = 0;
    const dpr = window.devicePixelRatio || 1;
    cv.style.width = HC * CELL + 'px'; cv.style.height = HR * CELL + 'px';
    cv.width = Math.round(HC * CELL * dpr); cv.height = Math.round(HR * CELL * dpr);
    const ctx = cv.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, HC * CELL, HR * CELL);
    for (let t = 0; t < T; t++) {
      ctx.fillStyle = ramp(max > lo ? (values[t] - lo) / (max - lo) : 0);
      ctx.fillRect((t % HC) * CELL, Math.floor(t / HC) * CELL, CELL - (CELL > 4 ? 1 : 0), CELL - (CELL > 4 ? 1 : 0));
    }
    scaleEl.innerHTML = '<span>' + esc(short(lo)) + '</span><span style="flex:1;margin:0 6px;height:8px;align-self:center;background:linear-gradient(90deg,' +
      VIRIDIS.map(function (c) { return 'rgb(' + c.join(',') + ')'; }).join(',') + ')"></span><span>' + esc(short(max)) + ' ' + unit + '</span>';
    function tileOf(ev) {
      const r = cv.getBoundingClientRect();
      const cx = Math.floor((ev.clientX - r.left) / CELL), cy = Math.floor((ev.clientY - r.top) / CELL);
      const t = cy * HC + cx;
      return cx >= 0 && cx < HC && t >= 0 && t < T ? t : -1;
    }
    cv.addEventListener('mousemove', function (ev) {
      const t = tileOf(ev);
      if (t < 0) { hideTip(); return; }
      showTip(ev, 'tile ' + t + '\n' + label + ': ' + fmt(values[t]) + ' ' + unit + (max > 0 ? ' (' + (100 * values[t] / max).toFixed(1) + '% of the largest)' : ''));
    });
    cv.addEventListener('mouseleave', hideTip);
    cv.addEventListener('click', function (ev) {
      const t = tileOf(ev);
      if (t < 0) return;
      selected = -1;
      details.innerHTML = tileBlock(t);
      const rows = Math.min(F.thi - F.tlo, 32);
      V.t0 = t - rows / 2; V.t1 = V.t0 + rows;
      clampView(); redraw();
    });
  }
  function buildHeatmaps() {
    const busy = new Float64Array(T), mem = new Float64Array(T);
    for (let t = 0; t < T; t++) {
      for (let i = tileStart[t]; i < tileStart[t + 1]; i++) {
        const k = sKind[i];
        if (k === COMPUTE || k === EXCHANGE || k === HOST) busy[t] += sEnd[i] - sStart[i];
      }
      const m = D.memory;
      for (let j = m.tileStart[t]; j < m.tileStart[t + 1]; j++) {
        if (D.segKinds[m.kind[j]] !== 'free') mem[t] += m.size[j];
      }
    }
    heatmap($('heat-busy'), $('scale-busy'), busy, 'cycles', 'busy');
    heatmap($('heat-mem'), $('scale-mem'), mem, 'B', 'in use');
  }

  // ---------- phases and plan tables
  function buildPhases() {
    if (!phases.length) { $('phases').innerHTML = '<p class="muted">No exchange phases.</p>'; return; }
    const tb = el('table');
    tb.innerHTML = '<tr><th>phase</th><th>start</th><th>horizon</th><th>lower bound</th><th>gap</th><th>bound/horizon</th><th>schedule</th><th>senders</th><th>receivers</th><th>max send B</th><th>max recv B</th></tr>';
    phases.forEach(function (x) {
      const p = x.p;
      const tr = el('tr', { class: 'click' });
      tr.innerHTML = '<td>' + esc(p.id + ' ' + p.name) + '</td><td>' + fmt(p.start) + '</td><td>' + fmt(p.horizon) + '</td><td>' + fmt(p.bound) +
        '</td><td>' + fmt(p.horizon - p.bound) + '</td><td>' + (p.horizon ? (100 * p.bound / p.horizon).toFixed(1) + '%' : '') + '</td><td>' + esc(p.schedule) +
        '</td><td>' + fmt(x.senders) + '</td><td>' + fmt(x.receivers) + '</td><td>' + fmt(x.maxS) + '</td><td>' + fmt(x.maxR) + '</td>';
      tr.addEventListener('click', function () { setFilter(EXCHANGE, -1, -1, p.id); });
      tb.appendChild(tr);
    });
    $('phases').appendChild(tb);
  }
  function buildPlan() {
    const P = D.plan, out = $('plan');
    if (!P.gemms.length && !P.finalists.length) { out.innerHTML = '<p class="muted">No plan summary in this profile.</p>'; return; }
    let h = '<p>predicted ' + fmt(P.predictedCycles) + ' cycles, measured ' + fmt(M.cycles) + '</p>';
    h += '<table><tr><th>GEMM</th><th>M x K x N</th><th>grid (rows x cols x K-split)</th><th>tiles</th><th>kernel</th></tr>';
    P.gemms.forEach(function (g) {
      h += '<tr><td>' + esc(g.name) + '</td><td>' + esc(g.shape) + '</td><td>' + esc(g.grid) + '</td><td>' + fmt(g.tiles) + '</td><td>' + esc(g.kernel) + '</td></tr>';
    });
    h += '</table><h3>Finalists</h3><table><tr><th>rank</th><th>mid cycles</th><th>low cycles</th>' +
      P.gemms.map(function (g) { return '<th>' + esc(g.name) + '</th>'; }).join('') + '<th></th></tr>';
    P.finalists.forEach(function (f) {
      h += '<tr' + (f.chosen ? ' class="chosen"' : '') + '><td>' + f.rank + '</td><td>' + fmt(f.midCycles) + '</td><td>' + fmt(f.lowCycles) + '</td>' +
        f.grids.map(function (g) { return '<td>' + esc(g) + '</td>'; }).join('') + '<td>' + (f.chosen ? 'chosen' : '') + '</td></tr>';
    });
    out.innerHTML = h + '</table>';
  }

  // ---------- page
  $('meta').innerHTML = esc(M.target) + ' \u00b7 ' + fmt(T) + ' tiles \u00b7 ' + fmt(M.cycles) + ' cycles' +
    (M.clockHz ? ' (' + us(M.cycles) + ')' : '') + ' \u00b7 ' + fmt(N) + ' steps \u00b7 ' + fmt(M.samples) + ' samples \u00b7 ' +
    phases.length + ' exchange phases' + (M.synthetic ? '<span class="badge" title="made by profile.Synthetic, not by a run">synthetic</span>' : '');

  // locate returns the client coordinates of the middle of step i, for
  // tests and tools that drive the page.
  R.locate = function (i) {
    const r = cvT.getBoundingClientRect(), t = stepTile[i];
    const c = (Math.max(sStart[i], V.c0) + Math.min(sEnd[i], V.c1)) / 2;
    return { x: r.left + (c - V.c0) / (V.c1 - V.c0) * r.width, y: r.top + (t - V.t0 + 0.5) / (V.t1 - V.t0) * r.height, tile: t };
  };
  R.stepsOf = function (kernel) {
    const j = S.indexOf(kernel), out = [];
    for (let i = 0; i < N; i++) if (sKernel[i] === j) out.push(i);
    return out;
  };
  R.step = function (i) {
    return { tile: stepTile[i], start: sStart[i], end: sEnd[i], kind: KINDS[sKind[i]], kernel: S[sKernel[i]], operation: S[sOp[i]], value: S[sValue[i]] };
  };
  R.selected = function () { return selected; };
  R.draw = drawTimeline;

  recompute();
  drawTimeline();
  buildSummary();
  buildHeatmaps();
  buildPhases();
  buildPlan();
  window.addEventListener('resize', redraw);
  R.openMs = performance.now();
  R.ready = true;
  document.body.dataset.ready = 'true';
})();
