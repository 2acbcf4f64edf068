// symmem-trace html (trace_html.hpp): trace-event JSON in, one self-contained HTML page out.
//
// The reader is a strict JSON parser (RFC 8259, nesting depth 64) that hands the elements
// of "traceEvents" to the page builder one at a time, so a big file is never held as a
// tree. Of the trace-event format it takes "X" slices, "s"/"f" flows paired by id, and the
// process_name / process_sort_index / thread_name / thread_sort_index metadata; other
// phases are counted and named on the page, not drawn.
//
// Page layout. Times are the file's µs. Slices are grouped into time chunks (1/512 of the
// trace each); a chunk is an SVG group whose rectangles sit at x = ts - chunk start, and the
// script zooms by rewriting each chunk's translate(..) scale(k,1). Keeping the coordinates
// small keeps them exact where the browser renders in single precision (a 1 s trace zoomed
// to 1 µs), and a zoom step costs one attribute per chunk and per arrow, not per slice.
// Arrows are in pixels (an arrowhead must not stretch with the time scale); the script
// moves their ends. A slice's 1 px non-scaling stroke of its own colour keeps sub-pixel
// slices visible at any zoom.
#include "trace_html.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace symmem::trace {
namespace {

// ---- JSON ----

struct JMember;

struct JVal {
  enum Kind : uint8_t { kNull, kBool, kNum, kStr, kArr, kObj };
  Kind kind = kNull;
  bool b = false;
  double num = 0;
  std::string str;  // the string, or the number as written
  std::vector<JVal> arr;
  std::vector<JMember> obj;  // a struct of its own, not std::pair: clang 14 with libstdc++ 12
                             // instantiates pair<string, JVal> while JVal is incomplete
  const JVal* get(const char* key) const;
};

struct JMember {
  std::string first;
  JVal second;
};

const JVal* JVal::get(const char* key) const {
  for (const auto& m : obj)
    if (m.first == key) return &m.second;
  return nullptr;
}

class JsonReader {
 public:
  JsonReader(const std::string& text, std::string* err) : s_(text), err_(err) {}

  // The whole document; each element of a top-level "traceEvents" array (or of a top-level
  // array: the format's other form) goes to on_event instead of into a tree.
  bool document(const std::function<bool(const JVal&, size_t)>& on_event, bool* had_events) {
    ws();
    *had_events = false;
    if (peek() == '[') {
      *had_events = true;
      if (!events(on_event)) return false;
    } else if (peek() == '{') {
      ++p_;
      ws();
      if (peek() == '}') {
        ++p_;
      } else {
        for (;;) {
          std::string key;
          ws();
          if (peek() != '"') return fail_sep("expected a string key in object");
          if (!string(&key)) return false;
          ws();
          if (peek() != ':') return fail_sep("expected ':' after object key");
          ++p_;
          ws();
          if (key == "traceEvents") {
            if (peek() != '[') return fail("traceEvents is not an array");
            *had_events = true;
            if (!events(on_event)) return false;
          } else {
            JVal skip;
            if (!value(&skip, 1)) return false;
          }
          ws();
          if (peek() == ',') {
            ++p_;
            continue;
          }
          if (peek() == '}') {
            ++p_;
            break;
          }
          return fail_sep("expected ',' or '}' in object");
        }
      }
    } else {
      return fail(p_ >= s_.size() ? "empty file" : "expected '{' or '[' at the top level");
    }
    ws();
    if (p_ != s_.size()) return fail("unexpected data after the JSON document");
    return true;
  }

  // At a separator: the message, or that the file ended.
  bool fail_sep(const char* msg) { return fail(peek() == -1 ? "unexpected end of file" : msg); }

  // "line L, column C: msg" for the current position.
  bool fail(const char* msg) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < p_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') ++line, col = 1;
      else ++col;
    }
    *err_ = "line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + msg;
    return false;
  }

 private:
  static constexpr int kMaxDepth = 64;

  int peek() const { return p_ < s_.size() ? static_cast<unsigned char>(s_[p_]) : -1; }
  void ws() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\t' || s_[p_] == '\n' || s_[p_] == '\r')) ++p_;
  }

  bool events(const std::function<bool(const JVal&, size_t)>& on_event) {
    ++p_;  // '['
    ws();
    if (peek() == ']') return ++p_, true;
    for (size_t i = 0;; ++i) {
      JVal ev;
      ws();
      if (!value(&ev, 2)) return false;
      if (!on_event(ev, i)) return false;
      ws();
      if (peek() == ',') {
        ++p_;
        continue;
      }
      if (peek() == ']') return ++p_, true;
      return fail_sep("expected ',' or ']' in array");
    }
  }

  bool literal(const char* word) {
    const size_t n = std::strlen(word);
    if (s_.compare(p_, n, word) != 0) return fail("invalid literal");
    p_ += n;
    return true;
  }

  bool value(JVal* v, int depth) {
    if (depth > kMaxDepth) return fail("nesting deeper than 64");
    ws();
    switch (peek()) {
      case '{': {
        v->kind = JVal::kObj;
        ++p_;
        ws();
        if (peek() == '}') return ++p_, true;
        for (;;) {
          ws();
          if (peek() != '"') return fail_sep("expected a string key in object");
          std::string key;
          if (!string(&key)) return false;
          ws();
          if (peek() != ':') return fail_sep("expected ':' after object key");
          ++p_;
          JVal m;
          if (!value(&m, depth + 1)) return false;
          v->obj.push_back(JMember{std::move(key), std::move(m)});
          ws();
          if (peek() == ',') {
            ++p_;
            continue;
          }
          if (peek() == '}') return ++p_, true;
          return fail_sep("expected ',' or '}' in object");
        }
      }
      case '[': {
        v->kind = JVal::kArr;
        ++p_;
        ws();
        if (peek() == ']') return ++p_, true;
        for (;;) {
          JVal m;
          if (!value(&m, depth + 1)) return false;
          v->arr.push_back(std::move(m));
          ws();
          if (peek() == ',') {
            ++p_;
            continue;
          }
          if (peek() == ']') return ++p_, true;
          return fail_sep("expected ',' or ']' in array");
        }
      }
      case '"':
        v->kind = JVal::kStr;
        return string(&v->str);
      case 't':
        v->kind = JVal::kBool, v->b = true;
        return literal("true");
      case 'f':
        v->kind = JVal::kBool, v->b = false;
        return literal("false");
      case 'n':
        v->kind = JVal::kNull;
        return literal("null");
      case -1:
        return fail("unexpected end of file");
      default:
        return number(v);
    }
  }

  bool digits() {
    const size_t b = p_;
    while (p_ < s_.size() && s_[p_] >= '0' && s_[p_] <= '9') ++p_;
    return p_ > b;
  }

  bool number(JVal* v) {
    const size_t b = p_;
    if (peek() == '-') ++p_;
    if (peek() == '0') {
      ++p_;
    } else if (!digits()) {
      p_ = b;
      return fail("unexpected character");
    }
    if (peek() == '.') {
      ++p_;
      if (!digits()) return fail("expected digits after '.'");
    }
    if (peek() == 'e' || peek() == 'E') {
      ++p_;
      if (peek() == '+' || peek() == '-') ++p_;
      if (!digits()) return fail("expected digits in exponent");
    }
    v->kind = JVal::kNum;
    v->str.assign(s_, b, p_ - b);
    v->num = std::strtod(v->str.c_str(), nullptr);
    if (!std::isfinite(v->num)) return fail("number out of range");
    return true;
  }

  static void utf8(std::string* o, uint32_t c) {
    if (c < 0x80) {
      *o += char(c);
    } else if (c < 0x800) {
      *o += char(0xc0 | (c >> 6));
      *o += char(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      *o += char(0xe0 | (c >> 12));
      *o += char(0x80 | ((c >> 6) & 0x3f));
      *o += char(0x80 | (c & 0x3f));
    } else {
      *o += char(0xf0 | (c >> 18));
      *o += char(0x80 | ((c >> 12) & 0x3f));
      *o += char(0x80 | ((c >> 6) & 0x3f));
      *o += char(0x80 | (c & 0x3f));
    }
  }

  bool hex4(uint32_t* c) {
    *c = 0;
    for (int i = 0; i < 4; ++i, ++p_) {
      const int h = peek();
      if (h >= '0' && h <= '9') *c = *c * 16 + uint32_t(h - '0');
      else if (h >= 'a' && h <= 'f') *c = *c * 16 + uint32_t(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') *c = *c * 16 + uint32_t(h - 'A' + 10);
      else return fail("bad \\u escape");
    }
    return true;
  }

  bool string(std::string* o) {
    ++p_;  // '"'
    for (;;) {
      const int c = peek();
      if (c == -1) return fail("unterminated string");
      if (c == '"') return ++p_, true;
      if (c < 0x20) return fail("control character in string");
      if (c != '\\') {
        *o += char(c);
        ++p_;
        continue;
      }
      ++p_;
      const int e = peek();
      ++p_;
      switch (e) {
        case '"': *o += '"'; break;
        case '\\': *o += '\\'; break;
        case '/': *o += '/'; break;
        case 'b': *o += '\b'; break;
        case 'f': *o += '\f'; break;
        case 'n': *o += '\n'; break;
        case 'r': *o += '\r'; break;
        case 't': *o += '\t'; break;
        case 'u': {
          uint32_t u;
          if (!hex4(&u)) return false;
          if (u >= 0xd800 && u < 0xdc00) {  // a surrogate pair
            uint32_t lo;
            if (peek() != '\\' || p_ + 1 >= s_.size() || s_[p_ + 1] != 'u') return fail("lone surrogate in \\u escape");
            p_ += 2;
            if (!hex4(&lo)) return false;
            if (lo < 0xdc00 || lo >= 0xe000) return fail("lone surrogate in \\u escape");
            u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
          } else if (u >= 0xdc00 && u < 0xe000) {
            return fail("lone surrogate in \\u escape");
          }
          utf8(o, u);
          break;
        }
        default:
          --p_;
          return fail("bad escape in string");
      }
    }
  }

  const std::string& s_;
  std::string* err_;
  size_t p_ = 0;
};

// ---- the trace ----

struct Slice {
  double ts = 0, dur = 0;
  int lane = 0, row = 0;
  uint32_t name = 0, cat = 0;  // indexes into Trace::strings
  bool unfinished = false;
  std::string args;  // "key: value" lines
};

struct FlowEnd {
  int lane = 0;
  double ts = 0;
};

struct Flow {
  std::vector<FlowEnd> s, f;
  uint32_t name = 0;
};

struct Lane {
  int64_t pid = 0, tid = 0;
  int rows = 1;
  double y = 0, h = 0;
};

struct Process {
  std::string name;
  bool named = false;
  int64_t sort = 0;
  bool sorted = false;
};

struct Trace {
  std::vector<std::string> strings;
  std::map<std::string, uint32_t> string_index;
  std::map<std::pair<int64_t, int64_t>, int> lane_of;
  std::vector<Lane> lanes;
  std::map<int64_t, Process> procs;
  std::map<std::pair<int64_t, int64_t>, std::pair<std::string, int64_t>> thread_names;  // name, sort index
  std::vector<Slice> slices;
  std::map<std::string, Flow> flows;  // by id as written
  size_t other_phases = 0;

  uint32_t intern(const std::string& s) {
    auto [it, fresh] = string_index.emplace(s, uint32_t(strings.size()));
    if (fresh) strings.push_back(s);
    return it->second;
  }
  int lane(int64_t pid, int64_t tid) {
    auto [it, fresh] = lane_of.emplace(std::make_pair(pid, tid), int(lanes.size()));
    if (fresh) lanes.push_back(Lane{pid, tid});
    procs[pid];
    return it->second;
  }
};

// Compact JSON for an args value in a tooltip: strings bare at the top level.
void value_text(const JVal& v, std::string* o, bool top) {
  switch (v.kind) {
    case JVal::kNull: *o += "null"; break;
    case JVal::kBool: *o += v.b ? "true" : "false"; break;
    case JVal::kNum: *o += v.str; break;
    case JVal::kStr:
      if (top) *o += v.str;
      else *o += '"' + v.str + '"';
      break;
    case JVal::kArr:
      *o += '[';
      for (size_t i = 0; i < v.arr.size(); ++i) {
        if (i) *o += ',';
        value_text(v.arr[i], o, false);
      }
      *o += ']';
      break;
    case JVal::kObj:
      *o += '{';
      for (size_t i = 0; i < v.obj.size(); ++i) {
        if (i) *o += ',';
        *o += '"' + v.obj[i].first + "\":";
        value_text(v.obj[i].second, o, false);
      }
      *o += '}';
      break;
  }
}

std::string event_error(size_t i, const std::string& msg) { return "traceEvents[" + std::to_string(i) + "]: " + msg; }

bool int_field(const JVal& ev, const char* key, int64_t* out) {
  const JVal* v = ev.get(key);
  if (!v || v->kind != JVal::kNum || v->num != std::floor(v->num) || std::fabs(v->num) > 9007199254740992.0) return false;
  *out = int64_t(v->num);
  return true;
}

bool add_event(Trace* t, const JVal& ev, size_t i, std::string* err) {
  if (ev.kind != JVal::kObj) return *err = event_error(i, "not an object"), false;
  const JVal* ph = ev.get("ph");
  if (!ph || ph->kind != JVal::kStr) return *err = event_error(i, "no \"ph\" string"), false;
  const std::string& p = ph->str;
  if (p != "X" && p != "s" && p != "f" && p != "M") {
    ++t->other_phases;
    return true;
  }
  int64_t pid, tid = 0;
  if (!int_field(ev, "pid", &pid)) return *err = event_error(i, "\"" + p + "\" event without an integer \"pid\""), false;
  if (ev.get("tid") && !int_field(ev, "tid", &tid))
    return *err = event_error(i, "\"tid\" is not an integer"), false;
  const JVal* name = ev.get("name");
  if (name && name->kind != JVal::kStr) return *err = event_error(i, "\"name\" is not a string"), false;
  if (p == "M") {
    const JVal* args = ev.get("args");
    if (!name || !args || args->kind != JVal::kObj) return true;  // metadata we do not use
    const JVal* nm = args->get("name");
    const JVal* si = args->get("sort_index");
    if (name->str == "process_name" && nm && nm->kind == JVal::kStr) {
      Process& pr = t->procs[pid];
      pr.name = nm->str, pr.named = true;
    } else if (name->str == "process_sort_index" && si && si->kind == JVal::kNum) {
      Process& pr = t->procs[pid];
      pr.sort = int64_t(si->num), pr.sorted = true;
    } else if (name->str == "thread_name" && nm && nm->kind == JVal::kStr) {
      t->thread_names[{pid, tid}].first = nm->str;
      t->lane(pid, tid);
    } else if (name->str == "thread_sort_index" && si && si->kind == JVal::kNum) {
      t->thread_names[{pid, tid}].second = int64_t(si->num);
    }
    return true;
  }
  const JVal* ts = ev.get("ts");
  if (!ts || ts->kind != JVal::kNum) return *err = event_error(i, "\"" + p + "\" event without a numeric \"ts\""), false;
  if (p == "X") {
    const JVal* dur = ev.get("dur");
    if (!dur || dur->kind != JVal::kNum || dur->num < 0)
      return *err = event_error(i, "\"X\" event without a non-negative numeric \"dur\""), false;
    if (!name) return *err = event_error(i, "\"X\" event without a \"name\""), false;
    const JVal* cat = ev.get("cat");
    if (cat && cat->kind != JVal::kStr) return *err = event_error(i, "\"cat\" is not a string"), false;
    const JVal* args = ev.get("args");
    if (args && args->kind != JVal::kObj) return *err = event_error(i, "\"args\" is not an object"), false;
    Slice s;
    s.ts = ts->num, s.dur = dur->num;
    s.lane = t->lane(pid, tid);
    s.name = t->intern(name->str);
    s.cat = t->intern(cat ? cat->str : std::string("(none)"));
    if (args)
      for (const auto& [k, v] : args->obj) {
        if (k == "unfinished" && v.kind == JVal::kBool && v.b) s.unfinished = true;
        s.args += '\n' + k + ": ";
        value_text(v, &s.args, true);
      }
    t->slices.push_back(std::move(s));
    return true;
  }
  const JVal* id = ev.get("id");
  if (!id || (id->kind != JVal::kNum && id->kind != JVal::kStr))
    return *err = event_error(i, "flow event without a numeric or string \"id\""), false;
  Flow& fl = t->flows[(id->kind == JVal::kNum ? "n" : "s") + id->str];
  if (name) fl.name = t->intern(name->str);
  else fl.name = t->intern("flow");
  (p == "s" ? fl.s : fl.f).push_back(FlowEnd{t->lane(pid, tid), ts->num});
  return true;
}

// ---- the page ----

// Text for XML: escaped, control characters and invalid UTF-8 replaced by '?'.
std::string xml(const std::string& s) {
  std::string o;
  o.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '&') o += "&amp;";
      else if (c == '<') o += "&lt;";
      else if (c == '>') o += "&gt;";
      else if (c == '"') o += "&quot;";
      else if (c < 0x20 && c != '\n' && c != '\t') o += '?';
      else o += char(c);
      ++i;
      continue;
    }
    const int n = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    bool ok = n > 0 && i + size_t(n) <= s.size() && c < 0xf5;
    for (int k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + size_t(k)]) & 0xc0) == 0x80;
    if (!ok) {
      o += '?';
      ++i;
      continue;
    }
    o.append(s, i, size_t(n));
    i += size_t(n);
  }
  return o;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// A tick step of 1, 2 or 5 times a power of ten giving about 8 ticks; the script's twin is
// in kScript.
double tick_step(double span) {
  const double raw = span / 8, p = std::pow(10.0, std::floor(std::log10(raw))), m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
                                    "#b07aa1", "#ff9da7", "#9c755f", "#17becf", "#bcbd22", "#8c6d31"};
constexpr const char* kFlowColours[] = {"#6a1b9a", "#111111", "#b2182b", "#1b7837", "#2166ac"};

constexpr double kLeft = 300, kWidth = 1060, kAxis = 34, kRow0 = 22, kRowN = 10, kLanePad = 6;
constexpr int kMaxRows = 6, kChunks = 512;

// Zoom (wheel), pan (drag), reset (double-click); #t=A,B in the address sets the view.
constexpr const char* kScript = R"JS(
(function () {
  var svg = document.getElementById('tl'), d = svg.dataset, NS = 'http://www.w3.org/2000/svg';
  var L = +d.left, W = +d.width, T0 = +d.t0, T1 = +d.t1, Y0 = +d.axis, Y1 = +d.bottom;
  var chunks = Array.prototype.map.call(svg.querySelectorAll('g.c'), function (g) { return [g, +g.dataset.t]; });
  var flows = Array.prototype.map.call(svg.querySelectorAll('.f'), function (l) { return [l, +l.dataset.t1, +l.dataset.t2]; });
  var ticks = document.getElementById('ticks'), view = document.getElementById('view');
  var v0 = T0, vs = T1 - T0, minSpan = Math.max((T1 - T0) * 1e-9, 1e-3);
  var m = /#t=([-0-9.e]+),([-0-9.e]+)/.exec(location.hash);
  if (m && +m[2] > +m[1]) { v0 = +m[1]; vs = +m[2] - +m[1]; }
  function X(t) { return L + (t - v0) * W / vs; }
  function clamp() {
    vs = Math.min(Math.max(vs, minSpan), T1 - T0);
    v0 = Math.min(Math.max(v0, T0), T1 - vs);
  }
  function draw() {
    clamp();
    var k = W / vs;
    chunks.forEach(function (c) { c[0].setAttribute('transform', 'translate(' + X(c[1]) + ',0) scale(' + k + ',1)'); });
    flows.forEach(function (f) { f[0].setAttribute('x1', X(f[1])); f[0].setAttribute('x2', X(f[2])); });
    while (ticks.firstChild) ticks.removeChild(ticks.firstChild);
    var raw = vs / 8, p = Math.pow(10, Math.floor(Math.log10(raw))), q = raw / p;
    var step = (q < 1.5 ? 1 : q < 3.5 ? 2 : q < 7.5 ? 5 : 10) * p;
    var dec = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
    for (var i = Math.ceil(v0 / step); i * step <= v0 + vs; ++i) {
      var x = X(i * step), ln = document.createElementNS(NS, 'line'), tx = document.createElementNS(NS, 'text');
      ln.setAttribute('x1', x); ln.setAttribute('x2', x); ln.setAttribute('y1', Y0 - 6); ln.setAttribute('y2', Y1);
      tx.setAttribute('x', x); tx.setAttribute('y', Y0 - 10); tx.textContent = (i * step).toFixed(dec);
      ticks.appendChild(ln); ticks.appendChild(tx);
    }
    view.textContent = 'view ' + v0.toFixed(3) + ' to ' + (v0 + vs).toFixed(3) + ' \u00b5s';
  }
  svg.addEventListener('wheel', function (e) {
    var r = svg.getBoundingClientRect(), x = e.clientX - r.left;
    if (x < L) return;
    e.preventDefault();
    var t = v0 + (x - L) * vs / W;
    vs *= e.deltaY < 0 ? 0.8 : 1.25;
    clamp();
    v0 = t - (x - L) * vs / W;
    draw();
  }, {passive: false});
  var drag = null;
  svg.addEventListener('mousedown', function (e) {
    if (e.clientX - svg.getBoundingClientRect().left >= L) { drag = [e.clientX, v0]; e.preventDefault(); }
  });
  window.addEventListener('mousemove', function (e) {
    if (drag) { v0 = drag[1] - (e.clientX - drag[0]) * vs / W; draw(); }
  });
  window.addEventListener('mouseup', function () { drag = null; });
  svg.addEventListener('dblclick', function () { v0 = T0; vs = T1 - T0; draw(); });
  draw();
})();
)JS";

constexpr const char* kStyle = R"CSS(
body { font: 13px sans-serif; margin: 8px; color: #222; }
h1 { font-size: 15px; margin: 0 0 4px; }
p { margin: 2px 0; }
#legend span.k { display: inline-block; margin-right: 12px; white-space: nowrap; }
#legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -2px; }
svg text { font: 11px sans-serif; }
#ticks line { stroke: #ddd; }
#ticks text { text-anchor: middle; fill: #444; }
.lane rect { fill: #fff; }
.lane.odd rect { fill: #f4f4f4; }
.lane text.dnf { fill: #c00; font-weight: bold; }
.c rect { stroke-width: 1px; vector-effect: non-scaling-stroke; }
.c rect.u { stroke: #000 !important; stroke-dasharray: 4 2; }
.c rect.m { fill-opacity: 0.5; }
.f { stroke-width: 1.2px; fill: none; }
#tl { cursor: grab; user-select: none; }
)CSS";

struct Box {
  double t0 = 0, t1 = 0;
  int lane = 0, row = 0;
  size_t slice = SIZE_MAX;  // drawn alone, else merged:
  size_t count = 0;
  std::map<uint32_t, size_t> names, cats;
};

// One box per slice, except runs of neighbours narrower than `bin` µs (gaps below `bin`)
// in the same lane and row, which become one box each.
std::vector<Box> boxes_for(const Trace& t, const std::vector<std::vector<size_t>>& by_row, double bin, bool merge) {
  std::vector<Box> out;
  for (const std::vector<size_t>& v : by_row) {
    for (size_t k = 0; k < v.size();) {
      const Slice& s = t.slices[v[k]];
      Box b;
      b.t0 = s.ts, b.t1 = s.ts + s.dur, b.lane = s.lane, b.row = s.row, b.slice = v[k];
      size_t e = k + 1;
      if (merge && s.dur < bin) {
        while (e < v.size() && t.slices[v[e]].dur < bin && t.slices[v[e]].ts <= b.t1 + bin) {
          b.t1 = std::max(b.t1, t.slices[v[e]].ts + t.slices[v[e]].dur);
          ++e;
        }
      }
      if (e - k > 1) {
        b.slice = SIZE_MAX, b.count = e - k;
        for (size_t j = k; j < e; ++j) ++b.names[t.slices[v[j]].name], ++b.cats[t.slices[v[j]].cat];
      }
      out.push_back(std::move(b));
      k = e;
    }
  }
  return out;
}

size_t count_boxes(const Trace& t, const std::vector<std::vector<size_t>>& by_row, double bin) {
  size_t n = 0;
  for (const std::vector<size_t>& v : by_row)
    for (size_t k = 0; k < v.size(); ++n) {
      const Slice& s = t.slices[v[k]];
      double end = s.ts + s.dur;
      size_t e = k + 1;
      if (s.dur < bin)
        for (; e < v.size() && t.slices[v[e]].dur < bin && t.slices[v[e]].ts <= end + bin; ++e)
          end = std::max(end, t.slices[v[e]].ts + t.slices[v[e]].dur);
      k = e;
    }
  return n;
}

std::string page(Trace& t, const std::string& title, const HtmlOptions& opt, HtmlResult* res) {
  // Lanes in order: process sort index, pid, thread sort index, tid.
  for (auto& [pid, pr] : t.procs)
    if (!pr.named) pr.name = "pid " + std::to_string(pid);
  for (auto& pp : t.procs) {  // a process known only by its metadata still gets a lane
    const int pid = pp.first;  // a named variable: clang 14 cannot capture a structured binding
    if (std::none_of(t.lanes.begin(), t.lanes.end(), [&](const Lane& l) { return l.pid == pid; })) t.lane(pid, 0);
  }
  std::vector<int> order(t.lanes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
  auto key = [&](int i) {
    const Lane& l = t.lanes[size_t(i)];
    const Process& pr = t.procs[l.pid];
    auto tn = t.thread_names.find({l.pid, l.tid});
    return std::make_tuple(pr.sorted ? pr.sort : l.pid, l.pid, tn != t.thread_names.end() ? tn->second.second : 0, l.tid);
  };
  std::sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });

  // Rows: a slice inside another goes one row down (up to kMaxRows).
  std::vector<std::vector<size_t>> per_lane(t.lanes.size());
  for (size_t i = 0; i < t.slices.size(); ++i) per_lane[size_t(t.slices[i].lane)].push_back(i);
  std::vector<std::vector<size_t>> by_row(t.lanes.size() * kMaxRows);
  for (size_t li = 0; li < per_lane.size(); ++li) {
    std::vector<size_t>& v = per_lane[li];
    std::sort(v.begin(), v.end(), [&](size_t a, size_t b) {
      const Slice &x = t.slices[a], &y = t.slices[b];
      return x.ts != y.ts ? x.ts < y.ts : x.dur > y.dur;
    });
    std::vector<double> open;  // ends of the enclosing slices
    for (size_t i : v) {
      Slice& s = t.slices[i];
      // A zero-length slice at its parent's end (a sleep begun as the trace ended) is inside;
      // ts + dur of the parent may be that end less a rounding error.
      const double eps = 1e-9 * std::max(1.0, std::fabs(s.ts));
      while (!open.empty() && (open.back() < s.ts - eps || (open.back() <= s.ts + eps && s.dur > 0))) open.pop_back();
      s.row = std::min<int>(int(open.size()), kMaxRows - 1);
      open.push_back(s.ts + s.dur);
      t.lanes[li].rows = std::max(t.lanes[li].rows, s.row + 1);
      by_row[li * kMaxRows + size_t(s.row)].push_back(i);
    }
  }
  double y = kAxis;
  for (int i : order) {
    Lane& l = t.lanes[size_t(i)];
    l.y = y;
    l.h = 2 * kLanePad + kRow0 + kRowN * (l.rows - 1);
    y += l.h;
  }
  const double bottom = y;
  auto row_y = [&](const Lane& l, int row) { return l.y + kLanePad + (row ? kRow0 + kRowN * (row - 1) : 0); };
  auto row_h = [&](int row) { return (row ? kRowN : kRow0) - 1; };

  // Time range (with flows), padded by 1%.
  double t0 = 1e300, t1 = -1e300;
  for (const Slice& s : t.slices) t0 = std::min(t0, s.ts), t1 = std::max(t1, s.ts + s.dur);
  for (const auto& [id, f] : t.flows) {
    for (const FlowEnd& e : f.s) t0 = std::min(t0, e.ts), t1 = std::max(t1, e.ts);
    for (const FlowEnd& e : f.f) t0 = std::min(t0, e.ts), t1 = std::max(t1, e.ts);
  }
  if (t0 > t1) t0 = 0, t1 = 1;
  if (t1 - t0 < 1e-3) t1 = t0 + 1e-3;
  const double pad = (t1 - t0) * 0.01;
  t0 = t0 >= 0 ? std::max(0.0, t0 - pad) : t0 - pad;  // a merged trace starts at 0
  t1 += pad;
  const double k = kWidth / (t1 - t0);
  auto px = [&](double ts) { return kLeft + (ts - t0) * k; };

  // Boxes: every slice, or sub-pixel runs merged until under the cap.
  double bin = 0;
  bool merge = t.slices.size() > opt.max_slices;
  if (merge) {
    bin = (t1 - t0) / kWidth;
    for (int i = 0; i < 60 && count_boxes(t, by_row, bin) > opt.max_slices; ++i) bin *= 2;
  }
  const std::vector<Box> boxes = boxes_for(t, by_row, bin, merge);

  // Categories: colours in name order ("sleep" grey); flow kinds likewise.
  std::map<std::string, size_t> cat_count;
  for (const Slice& s : t.slices) ++cat_count[t.strings[s.cat]];
  std::map<std::string, int> cat_class;
  std::string style = kStyle;
  {
    int i = 0;
    for (const auto& [c, n] : cat_count) {
      const char* col = c == "sleep" ? "#9a9a9a" : kPalette[size_t(i++) % std::size(kPalette)];
      const int cls = int(cat_class.size());
      cat_class[c] = cls;
      style += ".k" + std::to_string(cls) + " { fill: " + col + "; stroke: " + col + "; background: " + col + "; }\n";
    }
  }
  std::map<std::string, size_t> flow_count;
  std::vector<std::tuple<const Flow*, FlowEnd, FlowEnd>> pairs;
  size_t incomplete = 0;
  for (const auto& [id, f] : t.flows) {
    const size_t n = std::min(f.s.size(), f.f.size());
    for (size_t i = 0; i < n; ++i) pairs.emplace_back(&f, f.s[i], f.f[i]);
    incomplete += f.s.size() + f.f.size() - 2 * n;
    if (n) flow_count[t.strings[f.name]] += n;
  }
  std::map<std::string, int> flow_class;
  for (const auto& [name, n] : flow_count) {
    const int cls = int(flow_class.size());
    flow_class[name] = cls;
    const char* col = kFlowColours[size_t(cls) % std::size(kFlowColours)];
    style += ".g" + std::to_string(cls) + " { stroke: " + col + "; background: " + col + "; }\n";
  }

  res->lanes = t.lanes.size();
  res->processes = t.procs.size();
  res->slices = t.slices.size();
  res->flows = pairs.size();
  for (const Box& b : boxes) (b.slice == SIZE_MAX ? res->merged_boxes : res->drawn_slices)++;

  std::string o;
  o.reserve(boxes.size() * 220 + pairs.size() * 200 + 16384);
  o += "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"/>\n<title>" + xml(title) + " - symmem trace</title>\n<style>" +
       style + "</style></head>\n<body>\n<h1>symmem trace: " + xml(title) + "</h1>\n";
  o += "<p id=\"stats\" data-slices=\"" + std::to_string(res->slices) + "\" data-drawn=\"" +
       std::to_string(res->drawn_slices + res->merged_boxes) + "\" data-merged-boxes=\"" +
       std::to_string(res->merged_boxes) + "\" data-flows=\"" + std::to_string(res->flows) + "\">" +
       std::to_string(res->processes) + " processes, " + std::to_string(res->lanes) + " lanes, " +
       std::to_string(res->slices) + " slices, " + std::to_string(res->flows) + " arrows.";
  if (t.slices.empty()) o += " No slices in this trace.";
  if (res->merged_boxes)
    o += " Drawn: " + std::to_string(res->drawn_slices + res->merged_boxes) + " boxes, " +
         std::to_string(res->drawn_slices) + " slices alone and " + std::to_string(res->merged_boxes) +
         " boxes of neighbours narrower than " + fmt("%.4g", bin) + " \u00b5s (over " + std::to_string(opt.max_slices) +
         " slices; --max-slices); zooming in does not split them.";
  if (incomplete) o += " " + std::to_string(incomplete) + " flow ends without their other end, not drawn.";
  if (t.other_phases) o += " " + std::to_string(t.other_phases) + " events of other phases, not drawn.";
  o += "</p>\n<p><span id=\"view\"></span> &#183; wheel: zoom &#183; drag: pan &#183; double-click: whole trace &#183; "
       "hover: details</p>\n<p id=\"legend\">";
  for (const auto& [c, n] : cat_count)
    o += "<span class=\"k\"><i class=\"k" + std::to_string(cat_class[c]) + "\"></i>" + xml(c) + " (" +
         std::to_string(n) + ")</span>";
  for (const auto& [name, n] : flow_count)
    o += "<span class=\"k\"><i class=\"g" + std::to_string(flow_class[name]) + "\" style=\"height:2px\"></i>&#8594; " +
         xml(name) + " (" + std::to_string(n) + ")</span>";
  o += "<span class=\"k\"><i style=\"border:1px dashed #000;width:10px;height:10px\"></i>unfinished</span>";
  if (res->merged_boxes) o += "<span class=\"k\"><i style=\"background:#4e79a7;opacity:.5\"></i>merged slices</span>";
  o += "</p>\n";

  char b[512];
  std::snprintf(b, sizeof b,
                "<svg id=\"tl\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" data-left=\"%.0f\" "
                "data-width=\"%.0f\" data-t0=\"%.6f\" data-t1=\"%.6f\" data-axis=\"%.0f\" data-bottom=\"%.0f\">\n",
                kLeft + kWidth + 10, bottom + 4, kLeft, kWidth, t0, t1, kAxis, bottom);
  o += b;
  o += "<defs><clipPath id=\"plot\"><rect x=\"" + fmt("%.0f", kLeft) + "\" y=\"0\" width=\"" + fmt("%.0f", kWidth) +
       "\" height=\"" + fmt("%.0f", bottom + 4) + "\"/></clipPath>";
  for (const auto& [name, cls] : flow_class)
    o += "<marker id=\"a" + std::to_string(cls) +
         "\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\">"
         "<path d=\"M0,0 L10,5 L0,10 z\" fill=\"" +
         kFlowColours[size_t(cls) % std::size(kFlowColours)] + "\"/></marker>";
  o += "</defs>\n";
  // Lanes with their labels.
  for (size_t n = 0; n < order.size(); ++n) {
    const Lane& l = t.lanes[size_t(order[n])];
    const Process& pr = t.procs[l.pid];
    auto tn = t.thread_names.find({l.pid, l.tid});
    const std::string thread = tn != t.thread_names.end() && !tn->second.first.empty() ? tn->second.first
                                                                                          : "tid " + std::to_string(l.tid);
    std::snprintf(b, sizeof b,
                  "<g class=\"lane%s\" data-pid=\"%lld\" data-tid=\"%lld\"><rect x=\"0\" y=\"%.1f\" width=\"%.0f\" "
                  "height=\"%.1f\"/><text x=\"4\" y=\"%.1f\">",
                  n % 2 ? " odd" : "", static_cast<long long>(l.pid), static_cast<long long>(l.tid), l.y,
                  kLeft + kWidth, l.h, l.y + kLanePad + 15);
    o += b;
    static const std::string kDnf = "[did not finalize]";
    const size_t d = pr.name.find(kDnf);
    if (d == std::string::npos) {
      o += xml(pr.name);
    } else {
      o += xml(pr.name.substr(0, d)) + "<tspan class=\"dnf\">" + xml(kDnf) + "</tspan>" +
           xml(pr.name.substr(d + kDnf.size()));
    }
    o += " &#183; " + xml(thread) + "</text></g>\n";
  }
  // Axis (the script redraws it for each view).
  o += "<text x=\"" + fmt("%.0f", kLeft - 6) + "\" y=\"" + fmt("%.0f", kAxis - 10) +
       "\" text-anchor=\"end\">time (\u00b5s)</text>\n<g id=\"ticks\">";
  {
    const double step = tick_step(t1 - t0);
    const int dec = std::max(0, int(-std::floor(std::log10(step) + 1e-9)));
    for (double i = std::ceil(t0 / step); i * step <= t1; ++i) {
      std::snprintf(b, sizeof b, "<line x1=\"%.2f\" x2=\"%.2f\" y1=\"%.0f\" y2=\"%.0f\"/><text x=\"%.2f\" y=\"%.0f\">%.*f</text>",
                    px(i * step), px(i * step), kAxis - 6, bottom, px(i * step), kAxis - 10, dec, i * step);
      o += b;
    }
  }
  o += "</g>\n<g clip-path=\"url(#plot)\">\n";
  // Slices by time chunk.
  std::map<int, std::vector<size_t>> chunk_boxes;
  for (size_t i = 0; i < boxes.size(); ++i)
    chunk_boxes[std::clamp(int((boxes[i].t0 - t0) / (t1 - t0) * kChunks), 0, kChunks - 1)].push_back(i);
  for (const auto& [c, v] : chunk_boxes) {
    const double origin = t0 + (t1 - t0) * c / kChunks;
    std::snprintf(b, sizeof b, "<g class=\"c\" data-t=\"%.6f\" transform=\"translate(%.3f,0) scale(%.9g,1)\">\n", origin,
                  px(origin), k);
    o += b;
    for (size_t i : v) {
      const Box& x = boxes[i];
      const Lane& l = t.lanes[size_t(x.lane)];
      if (x.slice != SIZE_MAX) {
        const Slice& s = t.slices[x.slice];
        std::snprintf(b, sizeof b, "<rect class=\"s k%d%s\" x=\"%.6f\" y=\"%.1f\" width=\"%.6f\" height=\"%.0f\"><title>",
                      cat_class[t.strings[s.cat]], s.unfinished ? " u" : "", s.ts - origin, row_y(l, x.row), s.dur,
                      row_h(x.row));
        o += b;
        o += xml(t.strings[s.name]) + "\nts " + fmt("%.3f", s.ts) + " \u00b5s, dur " + fmt("%.3f", s.dur) + " \u00b5s";
        if (s.unfinished) o += " (unfinished: the trace ended inside it)";
        o += "\ncat: " + xml(t.strings[s.cat]) + xml(s.args) + "</title></rect>\n";
      } else {
        uint32_t top_cat = 0;
        size_t top = 0;
        for (const auto& [c2, n] : x.cats)
          if (n > top) top = n, top_cat = c2;
        std::snprintf(b, sizeof b,
                      "<rect class=\"m k%d\" data-n=\"%zu\" x=\"%.6f\" y=\"%.1f\" width=\"%.6f\" height=\"%.0f\"><title>",
                      cat_class[t.strings[top_cat]], x.count, x.t0 - origin, row_y(l, x.row), x.t1 - x.t0,
                      row_h(x.row));
        o += b;
        o += std::to_string(x.count) + " slices merged\n" + fmt("%.3f", x.t0) + " to " + fmt("%.3f", x.t1) + " \u00b5s";
        std::vector<std::pair<size_t, uint32_t>> names;
        for (const auto& [nm, n] : x.names) names.push_back({n, nm});
        std::sort(names.rbegin(), names.rend());
        for (size_t j = 0; j < names.size() && j < 8; ++j)
          o += "\n" + xml(t.strings[names[j].second]) + " x" + std::to_string(names[j].first);
        if (names.size() > 8) o += "\n...";
        o += "</title></rect>\n";
      }
    }
    o += "</g>\n";
  }
  // Arrows: from the source's lane (the row of its innermost slice there) to the target's.
  auto end_y = [&](const FlowEnd& e) {
    const Lane& l = t.lanes[size_t(e.lane)];
    int row = -1;
    for (size_t i : per_lane[size_t(e.lane)]) {
      const Slice& s = t.slices[i];
      if (s.ts > e.ts) break;
      if (e.ts <= s.ts + s.dur + 1e-9 * std::max(1.0, std::fabs(e.ts))) row = std::max(row, s.row);
    }
    return row < 0 ? l.y + kLanePad + kRow0 / 2 : row_y(l, row) + row_h(row) / 2;
  };
  for (const auto& [f, s, e] : pairs) {
    const int cls = flow_class[t.strings[f->name]];
    std::snprintf(b, sizeof b,
                  "<line class=\"f g%d\" marker-end=\"url(#a%d)\" data-t1=\"%.6f\" data-t2=\"%.6f\" x1=\"%.2f\" "
                  "y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\"><title>",
                  cls, cls, s.ts, e.ts, px(s.ts), end_y(s), px(e.ts), end_y(e));
    o += b;
    const Lane &ls = t.lanes[size_t(s.lane)], &le = t.lanes[size_t(e.lane)];
    o += xml(t.strings[f->name]) + ": " + xml(t.procs[ls.pid].name) + " at " + fmt("%.3f", s.ts) + " \u00b5s \u2192 " +
         xml(t.procs[le.pid].name) + " at " + fmt("%.3f", e.ts) + " \u00b5s</title></line>\n";
  }
  o += "</g>\n</svg>\n<script>" + std::string(kScript) + "</script>\n</body></html>\n";
  return o;
}

}  // namespace

bool write_trace_html(const std::string& in, const std::string& out_in, const HtmlOptions& opt, HtmlResult* res,
                      std::string* err) {
  std::string text;
  {
    FILE* f = std::fopen(in.c_str(), "rb");
    if (!f) return *err = in + ": " + std::strerror(errno), false;
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    const bool bad = std::ferror(f);
    std::fclose(f);
    if (bad) return *err = in + ": read error", false;
  }
  Trace t;
  std::string e;
  JsonReader rd(text, &e);
  bool had_events = false;
  const bool ok = rd.document([&](const JVal& ev, size_t i) { return add_event(&t, ev, i, &e) || rd.fail(e.c_str()); },
                              &had_events);
  if (!ok) return *err = in + ": " + e, false;
  if (!had_events) return *err = in + ": no \"traceEvents\" array: not a trace-event file", false;
  text.clear();
  text.shrink_to_fit();

  std::string out = out_in;
  if (out.empty()) {
    const size_t slash = in.find_last_of('/'), dot = in.find_last_of('.');
    out = (dot != std::string::npos && (slash == std::string::npos || dot > slash) ? in.substr(0, dot) : in) + ".html";
  }
  const size_t slash = in.find_last_of('/');
  const std::string html = page(t, slash == std::string::npos ? in : in.substr(slash + 1), opt, res);
  const std::string tmp = out + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) return *err = "cannot write " + tmp + ": " + std::strerror(errno), false;
  const bool wrote = std::fwrite(html.data(), 1, html.size(), f) == html.size();
  if (std::fclose(f) != 0 || !wrote || std::rename(tmp.c_str(), out.c_str()) != 0) {
    std::remove(tmp.c_str());
    return *err = "cannot write " + out + ": " + std::strerror(errno), false;
  }
  res->out_path = out;
  return true;
}

}  // namespace symmem::trace
