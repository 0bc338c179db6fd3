// The page's script and style, served from /topology.js and /topology.css so that the
// Content-Security-Policy can allow only the exporter's own origin and nothing inline. The script
// writes text only through textContent, option.text and title (never innerHTML), so a family's
// name, help or label value can never become markup.
#include "exporter/topology_page/topology_page.h"

namespace hwperf {
namespace {

constexpr std::string_view kScript = R"JS('use strict';
(function () {
  const POLL_MS = 1000;
  const PEAK_READS = 30;
  const machine = document.getElementById('machine');
  const select = document.getElementById('family');
  const status = document.getElementById('status');
  const lo = document.getElementById('lo');
  const hi = document.getElementById('hi');
  const pus = new Map();
  for (const el of machine.querySelectorAll('.pu')) pus.set(Number(el.id.slice(1)), el);
  const wanted = new URLSearchParams(location.search).get('family');
  let families = new Map();  // name -> family of the latest read
  let last = null;           // the latest read
  let previous = null;       // the read before it
  let rates = new Map();     // name -> Map(place key -> rate), from the last two reads
  let peaks = new Map();     // name -> the highest rate of each of the last PEAK_READS reads
  let drawn = false;
  const violations = [];

  document.addEventListener('securitypolicyviolation', function (e) {
    violations.push(e.violatedDirective);
    status.textContent = 'blocked by the Content-Security-Policy: ' + violations.join(', ');
  });

  // Rates of the two units the exporter's names carry; everything else is events per second.
  function unitOf(name) {
    if (name.endsWith('_seconds_total')) return 's/s';
    if (name.endsWith('_joules_total')) return 'W';
    return '/s';
  }
  function si(x) {
    if (!isFinite(x)) return '-';
    const a = Math.abs(x);
    const steps = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
    for (const [size, prefix] of steps) {
      if (a >= size) return (x / size).toPrecision(3) + prefix;
    }
    return a >= 0.01 || a === 0 ? x.toPrecision(3) : x.toExponential(1);
  }
  // Dark blue (none) through teal, green and yellow to red (the most), as the legend shows.
  const STOPS = [[44, 62, 112], [31, 138, 138], [142, 198, 63], [242, 193, 46], [228, 87, 46]];
  function colour(f) {
    const x = Math.min(1, Math.max(0, f)) * (STOPS.length - 1);
    const i = Math.min(STOPS.length - 2, Math.floor(x));
    const t = x - i;
    const c = STOPS[i].map((v, k) => Math.round(v + (STOPS[i + 1][k] - v) * t));
    const light = (0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2]) > 150;
    return {bg: 'rgb(' + c.join(',') + ')', fg: light ? '#111' : '#fff'};
  }

  function placeKeys(family, series, i) {
    if (family.scope === 'cpu') return ['c' + series.cpu[i]];
    if (family.scope === 'core') return ['k' + series.package[i] + '-' + series.core[i]];
    return ['p' + series.package[i], 'p' + series.package[i] + 'd' + (series.die ? series.die[i] : '')];
  }
  // Totals per place, summed over the series groups (labels other than the place).
  function totals(family) {
    const sums = new Map();
    for (const series of family.series) {
      for (let i = 0; i < series.value.length; i++) {
        const v = series.value[i];
        if (v === null) continue;
        for (const key of placeKeys(family, series, i)) sums.set(key, (sums.get(key) || 0) + v);
      }
    }
    return sums;
  }
  function computeRates(now, before) {
    const result = new Map();
    const dt = now.timestamp - before.timestamp;
    if (!(dt > 0)) return result;
    for (const [name, family] of now.families) {
      const old = before.families.get(name);
      if (!old) continue;
      const a = totals(family), b = totals(old), r = new Map();
      for (const [key, v] of a) {
        const w = b.get(key);
        // A total that went down restarted (a counter rebuilt): no rate this time.
        if (w !== undefined && v >= w) r.set(key, (v - w) / dt);
      }
      result.set(name, r);
    }
    return result;
  }

  function fillSelect() {
    const names = [...families.values()].filter(f => f.scope !== 'package').map(f => f.name);
    const have = [...select.options].map(o => o.value);
    if (names.join('\n') === have.join('\n')) return;
    const keep = select.value;
    select.textContent = '';
    for (const name of names) {
      const option = document.createElement('option');
      option.value = name;
      option.text = name;
      option.title = families.get(name).help;
      select.add(option);
    }
    // CPU time where counted, otherwise the first family counted per CPU.
    const preferred = [keep, wanted, 'hwperf_cpu_clock_seconds_total'];
    const choice = preferred.find(n => n && names.includes(n)) ||
        names.find(n => families.get(n).scope === 'cpu') || names[0];
    if (choice) select.value = choice;
  }

  function drawThreads() {
    const name = select.value;
    const family = families.get(name);
    const r = rates.get(name) || new Map();
    const unit = unitOf(name || '');
    // The scale tops at the highest rate of the last PEAK_READS reads on any CPU, so a colour
    // means the same from one read to the next and a CPU that gets busier warms up even when it
    // was already the busiest. Time per second is a share of the CPU: at least 1 s/s.
    let max = unit === 's/s' ? 1 : 0;
    for (const v of r.values()) max = Math.max(max, v);
    for (const v of peaks.get(name) || []) max = Math.max(max, v);
    for (const [cpu, el] of pus) {
      const core = el.parentElement.id;
      const v = r.get('c' + cpu) ?? (core ? r.get(core) : undefined);
      if (v === undefined) {
        el.style.backgroundColor = '';
        el.style.color = '';
        el.classList.add('none');
        el.dataset.value = '';
        el.title = 'CPU ' + cpu + ': ' + (family ? (previous ? 'not counted' : 'waiting for a second read') : 'nothing counted');
        continue;
      }
      const c = colour(max > 0 ? v / max : 0);
      el.classList.remove('none');
      el.style.backgroundColor = c.bg;
      el.style.color = c.fg;
      el.dataset.value = String(v);
      el.title = 'CPU ' + cpu + ': ' + si(v) + ' ' + unit + (family.scope === 'core' ? ' (its core)' : '');
    }
    lo.textContent = '0';
    hi.textContent = si(max) + ' ' + unit;
    select.title = family ? family.help : '';
  }

  function drawPower() {
    const parts = new Map();  // package element id -> [text, title]
    for (const [name, family] of families) {
      if (family.scope !== 'package' || !name.endsWith('_joules_total')) continue;
      const domain = name.replace(/^hwperf_(rapl_)?/, '').replace(/_joules_total$/, '');
      const r = rates.get(name) || new Map();
      for (const [key, watts] of r) {
        const m = /^p(\d+)(?:d(\d*))?$/.exec(key);
        const id = 'w' + m[1];
        if (!parts.has(id)) parts.set(id, [[], []]);
        if (m[2] === undefined) parts.get(id)[0].push(domain + ' ' + si(watts) + ' W');
        else if (m[2] !== '') parts.get(id)[1].push(domain + ' die ' + m[2] + ': ' + si(watts) + ' W');
      }
    }
    for (const el of machine.querySelectorAll('.w')) {
      const p = parts.get(el.id);
      el.textContent = p ? p[0].join(', ') : '';
      el.title = p ? p[1].join('\n') : '';
    }
  }

  function draw() {
    const start = performance.now();
    drawThreads();
    drawPower();
    machine.dataset.drawMs = (performance.now() - start).toFixed(1);
  }

  function apply(json) {
    const read = {timestamp: json.timestamp, families: new Map()};
    for (const family of json.families) read.families.set(family.name, family);
    if (last !== null) rates = computeRates(read, last);
    for (const [name, r] of rates) {
      const held = peaks.get(name) || [];
      held.push(Math.max(0, ...r.values()));
      if (held.length > PEAK_READS) held.shift();
      peaks.set(name, held);
    }
    previous = last;
    last = read;
    families = read.families;
    fillSelect();
    draw();
    if (!drawn) {
      drawn = true;
      performance.mark('hwperf-topology-first-draw');
    }
    if (violations.length === 0) {
      status.textContent = families.size === 0 ? 'no family is counted per CPU' :
          'read ' + new Date(json.timestamp * 1000).toLocaleTimeString();
    }
  }

  function poll() {
    if (document.hidden) {
      setTimeout(poll, POLL_MS);
      return;
    }
    fetch('topology.json', {cache: 'no-store', credentials: 'same-origin'})
      .then(function (response) {
        if (!response.ok) throw new Error('HTTP ' + response.status);
        return response.json();
      })
      .then(apply)
      .catch(function (e) { status.textContent = 'cannot read topology.json: ' + e.message; })
      .finally(function () { setTimeout(poll, POLL_MS); });
  }

  select.addEventListener('change', function () {
    const url = new URL(location.href);
    url.searchParams.set('family', select.value);
    history.replaceState(null, '', url);
    draw();
  });
  poll();
})();
)JS";

constexpr std::string_view kStyle =
    R"CSS(body{font:13px/1.3 system-ui,sans-serif;margin:6px;background:#fafafa;color:#222}
header{display:flex;flex-wrap:wrap;gap:.3em 1.2em;align-items:center;margin-bottom:4px}
h1{font-size:15px;margin:0}
#desc,#status{color:#555}
.scale{display:inline-block;width:9em;height:.9em;vertical-align:middle;border:1px solid #888;
  background:linear-gradient(to right,#2c3e70,#1f8a8a,#8ec63f,#f2c12e,#e4572e)}
#machine{display:flex;flex-wrap:wrap;align-items:flex-start}
.box{display:flex;flex-wrap:wrap;align-items:flex-start;align-content:flex-start;
  border:1px solid #888;border-radius:3px;padding:1px 2px 2px;margin:2px}
.box>.t{flex-basis:100%;font-size:11px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.pkg{background:#e3eaf4;border-color:#4a6a96}
.pkg>.t{font-weight:600}
.w{font-weight:600;color:#8a2c0d}
.numa{background:#f1ecdc;border-color:#9a8a5a}
.cache{background:#fff;border-color:#aaa}
.core{background:#e9e9e9;border-color:#999}
.pu{min-width:2.3em;margin:1px;padding:1px 2px;border:1px solid #666;border-radius:2px;
  background:#d0d0d0;text-align:center;font-size:11px;font-variant-numeric:tabular-nums;cursor:default}
.pu.none{background:#d0d0d0;color:#666}
.compact .core>.t,.compact .cache>.t{font-size:9px}
.compact .core>.t{display:none}
.compact .core{padding:0;margin:1px}
.compact .box{margin:1px}
.compact .pu{min-width:2em;font-size:9px;padding:0 1px}
)CSS";

constexpr std::string_view kCsp =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

}  // namespace

std::string_view topology_page_script() { return kScript; }
std::string_view topology_page_style() { return kStyle; }
std::string_view topology_page_csp() { return kCsp; }

}  // namespace hwperf
