// A Verilator C++ main for the project's self-contained tops (ib_soak, ib_loopback, ib_fabric):
// the model runs with no Python and no VPI in its loop; a controller (verif/native/__init__.py,
// or a script file) sends a command a line and reads one answer line per command.
//
//   ./Vtop [script]        commands from `script`, else from standard input
//
// Commands (names are the top's Verilog port names; values decimal or 0x-hex, any width):
//   set NAME VALUE [NAME VALUE ...]     drive inputs (applied between clock cycles)   -> ok
//   get NAME [NAME ...]                 read ports                                    -> hex values
//   step N                              N clock cycles                                -> cycle count
//   until EXPR OP VALUE MAX [CHUNK]     run until sum(EXPR) OP VALUE (EXPR: NAME[+NAME...], OP
//                                       one of == != >= <= > <), looked at every CHUNK cycles
//                                       (default 1), at most MAX cycles      -> "hit|timeout cycles"
//   axi_write PREFIX ADDR DATA          one AXI4-Lite write on PREFIX_aw*/w*/b*       -> bresp
//   axi_read PREFIX ADDR [ADDR ...]     AXI4-Lite reads on PREFIX_ar*/r*              -> hex data
//   trace FILE | trace off              VCD from now on (only in a build with --trace)  -> ok
//   record FILE NAME [NAME ...] | record off
//                                       from now on, in every cycle, each named port (up to
//                                       64 bits) that is not 0 is appended to FILE as a record
//                                       of three little-endian uint64: cycle, the name's index
//                                       in the command (from 0), value        -> ok N (ports)
//   peek PATH [PATH ...]                internal signals by hierarchical name, e.g.
//                                       top.dut.switch.core.lrx0.counters__vcrc (a build with
//                                       debug=True: public signals and VPI)           -> hex values
//   cycles                              cycles since the start                        -> count
//   ports                               every port: name, in/out, width               -> one line
//   quit
// A bad command answers "error <what>" and the driver goes on. Every answer ends with '\n' and
// is flushed. Port names come from ports.inc (generated from the Verilated header: tools name
// each port once, as X(name, cxx_member, width, is_input)).
#include <verilated.h>
#if VM_TRACE
#include <verilated_vcd_c.h>
#endif
#include "Vtop.h"
#ifdef NATIVE_VPI
#include <verilated_vpi.h>
#endif

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct Port {
    std::string name;
    int width;
    bool input;
    void *ptr;
};

std::unique_ptr<VerilatedContext> ctx;
std::unique_ptr<Vtop> top;
std::unordered_map<std::string, Port> ports;
std::vector<std::string> port_order;
uint64_t cycle = 0;
#if VM_TRACE
std::unique_ptr<VerilatedVcdC> vcd;
#endif
// `record`: the ports watched, and the file their non-zero values go to
struct Watch {
    void *ptr;
    int width;
};
std::vector<Watch> watched;
FILE *rec = nullptr;

void add_port(const char *name, void *ptr, int width, bool input) {
    ports[name] = Port{name, width, input, ptr};
    port_order.push_back(name);
}

void build_ports() {
#define X(NAME, MEMBER, WIDTH, INPUT) add_port(NAME, (void *)&top->MEMBER, WIDTH, INPUT);
#include "ports.inc"
#undef X
}

// values as vectors of 32-bit words, least significant first (Verilator's wide layout)
using Words = std::vector<uint32_t>;

int nwords(int width) { return (width + 31) / 32; }

Words read_port(const Port &p) {
    Words w(nwords(p.width), 0);
    if (p.width <= 8) w[0] = *(uint8_t *)p.ptr;
    else if (p.width <= 16) w[0] = *(uint16_t *)p.ptr;
    else if (p.width <= 32) w[0] = *(uint32_t *)p.ptr;
    else if (p.width <= 64) {
        uint64_t v = *(uint64_t *)p.ptr;
        w[0] = (uint32_t)v;
        w[1] = (uint32_t)(v >> 32);
    } else {
        const uint32_t *src = (const uint32_t *)p.ptr;   // VlWide: EData words
        for (size_t k = 0; k < w.size(); k++) w[k] = src[k];
    }
    return w;
}

void write_port(const Port &p, Words w) {
    w.resize(nwords(p.width), 0);
    int top_bits = p.width % 32;
    if (top_bits) w.back() &= (1u << top_bits) - 1;
    if (p.width <= 8) *(uint8_t *)p.ptr = (uint8_t)w[0];
    else if (p.width <= 16) *(uint16_t *)p.ptr = (uint16_t)w[0];
    else if (p.width <= 32) *(uint32_t *)p.ptr = w[0];
    else if (p.width <= 64) *(uint64_t *)p.ptr = (uint64_t)w[0] | ((uint64_t)w[1] << 32);
    else {
        uint32_t *dst = (uint32_t *)p.ptr;
        for (size_t k = 0; k < w.size(); k++) dst[k] = w[k];
    }
}

bool parse_value(const std::string &s, Words &out) {
    out.clear();
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        std::string h = s.substr(2);
        if (h.empty()) return false;
        for (int end = (int)h.size(); end > 0; end -= 8) {
            int beg = end - 8 < 0 ? 0 : end - 8;
            std::string chunk = h.substr(beg, end - beg);
            char *e;
            unsigned long v = std::strtoul(chunk.c_str(), &e, 16);
            if (*e) return false;
            out.push_back((uint32_t)v);
        }
        return true;
    }
    char *e;
    unsigned long long v = std::strtoull(s.c_str(), &e, 10);
    if (s.empty() || *e) return false;
    out.push_back((uint32_t)v);
    out.push_back((uint32_t)(v >> 32));
    return true;
}

std::string hex(const Words &w) {
    std::string s;
    char buf[16];
    bool lead = true;
    for (size_t k = w.size(); k-- > 0;) {
        if (lead) {
            if (w[k] == 0 && k) continue;
            snprintf(buf, sizeof buf, "%x", w[k]);
            lead = false;
        } else {
            snprintf(buf, sizeof buf, "%08x", w[k]);
        }
        s += buf;
    }
    return "0x" + s;
}

uint64_t value64(const Port &p) {
    Words w = read_port(p);
    return (uint64_t)w[0] | (w.size() > 1 ? (uint64_t)w[1] << 32 : 0);
}

const Port *find(const std::string &name, std::string &err) {
    auto it = ports.find(name);
    if (it == ports.end()) {
        err = "no port " + name;
        return nullptr;
    }
    return &it->second;
}

void dump() {
#if VM_TRACE
    if (vcd) vcd->dump(ctx->time());
#endif
}

uint64_t raw64(const Watch &w) {
    if (w.width <= 8) return *(uint8_t *)w.ptr;
    if (w.width <= 16) return *(uint16_t *)w.ptr;
    if (w.width <= 32) return *(uint32_t *)w.ptr;
    return *(uint64_t *)w.ptr;
}

// what the watched ports hold in this cycle (what its rising edge sees)
void record_cycle() {
    for (size_t k = 0; k < watched.size(); k++) {
        uint64_t v = raw64(watched[k]);
        if (v) {
            uint64_t r[3] = {cycle, (uint64_t)k, v};
            std::fwrite(r, sizeof r, 1, rec);
        }
    }
}

// one clock cycle: inputs set since the last falling edge are sampled at this rising edge
void tick() {
    if (rec) record_cycle();
    top->clk = 1;
    top->eval();
    ctx->timeInc(5);
    dump();
    top->clk = 0;
    top->eval();
    ctx->timeInc(5);
    dump();
    cycle++;
}

void set_u64(const std::string &name, uint64_t v) {
    Words w{(uint32_t)v, (uint32_t)(v >> 32)};
    write_port(ports.at(name), w);
}

uint64_t get_u64(const std::string &name) { return value64(ports.at(name)); }

bool has(const std::string &name) { return ports.count(name) != 0; }

// AXI4-Lite, one transaction at a time; the cycle after the handshake the valid goes low
bool axi_write(const std::string &pre, uint64_t addr, uint64_t data, std::string &out, uint64_t limit = 10000) {
    for (const char *s : {"_awaddr", "_awvalid", "_awready", "_wdata", "_wvalid", "_wready", "_bvalid", "_bready",
                          "_bresp"})
        if (!has(pre + s)) {
            out = "error no port " + pre + s;
            return false;
        }
    set_u64(pre + "_awaddr", addr);
    set_u64(pre + "_wdata", data);
    if (has(pre + "_wstrb")) set_u64(pre + "_wstrb", 0xF);
    set_u64(pre + "_awvalid", 1);
    set_u64(pre + "_wvalid", 1);
    set_u64(pre + "_bready", 0);
    top->eval();
    bool aw = false, w = false;
    uint64_t n = 0;
    while (!(aw && w)) {
        bool aw_now = !aw && get_u64(pre + "_awready");
        bool w_now = !w && get_u64(pre + "_wready");
        tick();
        if (aw_now) { aw = true; set_u64(pre + "_awvalid", 0); }
        if (w_now) { w = true; set_u64(pre + "_wvalid", 0); }
        top->eval();
        if (++n > limit) { out = "error axi_write: no awready/wready"; return false; }
    }
    set_u64(pre + "_bready", 1);
    top->eval();
    while (true) {
        bool b = get_u64(pre + "_bvalid");
        uint64_t resp = get_u64(pre + "_bresp");
        tick();
        if (b) {
            set_u64(pre + "_bready", 0);
            top->eval();
            out = std::to_string(resp);
            return true;
        }
        if (++n > limit) { out = "error axi_write: no bvalid"; return false; }
    }
}

bool axi_read(const std::string &pre, uint64_t addr, uint64_t &data, std::string &out, uint64_t limit = 10000) {
    for (const char *s : {"_araddr", "_arvalid", "_arready", "_rvalid", "_rready", "_rdata"})
        if (!has(pre + s)) {
            out = "error no port " + pre + s;
            return false;
        }
    set_u64(pre + "_araddr", addr);
    set_u64(pre + "_arvalid", 1);
    set_u64(pre + "_rready", 0);
    top->eval();
    uint64_t n = 0;
    while (true) {
        bool ar = get_u64(pre + "_arready");
        tick();
        if (ar) break;
        if (++n > limit) { out = "error axi_read: no arready"; return false; }
    }
    set_u64(pre + "_arvalid", 0);
    set_u64(pre + "_rready", 1);
    top->eval();
    while (true) {
        bool r = get_u64(pre + "_rvalid");
        data = get_u64(pre + "_rdata");
        tick();
        if (r) {
            set_u64(pre + "_rready", 0);
            top->eval();
            return true;
        }
        if (++n > limit) { out = "error axi_read: no rvalid"; return false; }
    }
}

uint64_t parse_u64(const std::string &s, bool &ok) {
    Words w;
    ok = parse_value(s, w);
    if (!ok) return 0;
    return (uint64_t)w[0] | (w.size() > 1 ? (uint64_t)w[1] << 32 : 0);
}

std::string run(const std::vector<std::string> &a) {
    const std::string &c = a[0];
    std::string err;
    if (c == "set") {
        if (a.size() < 3 || a.size() % 2 == 0) return "error set: NAME VALUE pairs";
        for (size_t k = 1; k + 1 < a.size(); k += 2) {
            const Port *p = find(a[k], err);
            if (!p) return "error " + err;
            if (!p->input) return "error set: " + a[k] + " is an output";
            Words w;
            if (!parse_value(a[k + 1], w)) return "error set: bad value " + a[k + 1];
            write_port(*p, w);
        }
        top->eval();
        return "ok";
    }
    if (c == "get") {
        std::string out;
        for (size_t k = 1; k < a.size(); k++) {
            const Port *p = find(a[k], err);
            if (!p) return "error " + err;
            out += (k > 1 ? " " : "") + hex(read_port(*p));
        }
        return out;
    }
    if (c == "step") {
        bool ok;
        uint64_t n = a.size() == 2 ? parse_u64(a[1], ok) : (ok = false, 0);
        if (!ok) return "error step N";
        for (uint64_t k = 0; k < n; k++) tick();
        return std::to_string(cycle);
    }
    if (c == "until") {
        if (a.size() != 5 && a.size() != 6) return "error until EXPR OP VALUE MAX [CHUNK]";
        std::vector<const Port *> terms;
        std::stringstream ss(a[1]);
        std::string t;
        while (std::getline(ss, t, '+')) {
            const Port *p = find(t, err);
            if (!p) return "error " + err;
            terms.push_back(p);
        }
        bool ok1, ok2, ok3 = true;
        uint64_t want = parse_u64(a[3], ok1), max = parse_u64(a[4], ok2);
        uint64_t chunk = a.size() == 6 ? parse_u64(a[5], ok3) : 1;
        if (!ok1 || !ok2 || !ok3 || chunk == 0) return "error until: bad number";
        const std::string &op = a[2];
        if (op != "==" && op != "!=" && op != ">=" && op != "<=" && op != ">" && op != "<")
            return "error until: bad operator " + op;
        auto holds = [&]() {
            uint64_t s = 0;
            for (auto *p : terms) s += value64(*p);
            return op == "==" ? s == want : op == "!=" ? s != want : op == ">=" ? s >= want
                 : op == "<=" ? s <= want : op == ">" ? s > want : s < want;
        };
        uint64_t n = 0;
        while (!holds()) {
            if (n >= max) return "timeout " + std::to_string(n);
            uint64_t k = std::min(chunk, max - n);
            for (uint64_t j = 0; j < k; j++) tick();
            n += k;
        }
        return "hit " + std::to_string(n);
    }
    if (c == "axi_write") {
        bool ok1, ok2;
        if (a.size() != 4) return "error axi_write PREFIX ADDR DATA";
        uint64_t addr = parse_u64(a[2], ok1), data = parse_u64(a[3], ok2);
        if (!ok1 || !ok2) return "error axi_write: bad number";
        std::string out;
        axi_write(a[1], addr, data, out);
        return out;
    }
    if (c == "axi_read") {
        if (a.size() < 3) return "error axi_read PREFIX ADDR [ADDR ...]";
        std::string out;
        for (size_t k = 2; k < a.size(); k++) {
            bool ok;
            uint64_t addr = parse_u64(a[k], ok), data = 0;
            if (!ok) return "error axi_read: bad address " + a[k];
            std::string e;
            if (!axi_read(a[1], addr, data, e)) return e;
            out += (k > 2 ? " " : "") + hex(Words{(uint32_t)data});
        }
        return out;
    }
    if (c == "peek") {
#ifdef NATIVE_VPI
        std::string out;
        for (size_t k = 1; k < a.size(); k++) {
            vpiHandle h = vpi_handle_by_name((PLI_BYTE8 *)a[k].c_str(), nullptr);
            if (!h) return "error peek: no signal " + a[k];
            s_vpi_value v;
            v.format = vpiHexStrVal;
            vpi_get_value(h, &v);
            out += (k > 1 ? " 0x" : "0x") + std::string(v.value.str);
        }
        return out;
#else
        return "error peek: this build has no VPI (build with debug=True)";
#endif
    }
    if (c == "cycles") return std::to_string(cycle);
    if (c == "ports") {
        std::string out;
        for (auto &n : port_order) {
            const Port &p = ports[n];
            out += (out.empty() ? "" : " ") + n + ":" + (p.input ? "in" : "out") + ":" + std::to_string(p.width);
        }
        return out;
    }
    if (c == "trace") {
#if VM_TRACE
        if (a.size() != 2) return "error trace FILE|off";
        if (a[1] == "off") {
            if (vcd) vcd->close();
            vcd.reset();
            return "ok";
        }
        if (!vcd) {
            ctx->traceEverOn(true);
            vcd = std::make_unique<VerilatedVcdC>();
            top->trace(vcd.get(), 99);
            vcd->open(a[1].c_str());
        }
        return "ok";
#else
        return "error trace: this build has no --trace";
#endif
    }
    if (c == "record") {
        if (a.size() < 2) return "error record FILE NAME [NAME ...] | record off";
        if (rec) std::fclose(rec);
        rec = nullptr;
        watched.clear();
        if (a[1] == "off") return "ok 0";
        if (a.size() < 3) return "error record FILE NAME [NAME ...]";
        std::vector<Watch> w;
        for (size_t k = 2; k < a.size(); k++) {
            const Port *p = find(a[k], err);
            if (!p) return "error " + err;
            if (p->width > 64) return "error record: " + a[k] + " is wider than 64 bits";
            w.push_back(Watch{p->ptr, p->width});
        }
        rec = std::fopen(a[1].c_str(), "wb");
        if (!rec) return "error record: cannot write " + a[1];
        watched = w;
        return "ok " + std::to_string(watched.size());
    }
    return "error unknown command " + c;
}

}  // namespace

int main(int argc, char **argv) {
    ctx = std::make_unique<VerilatedContext>();
    ctx->debug(0);
    ctx->randReset(0);
    top = std::make_unique<Vtop>(ctx.get(), "top");
    build_ports();
    top->clk = 0;
    top->eval();
    std::ifstream file;
    std::istream *in = &std::cin;
    if (argc > 1 && argv[1][0] != '+') {
        file.open(argv[1]);
        if (!file) {
            std::fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
            return 2;
        }
        in = &file;
    }
    std::string line;
    while (std::getline(*in, line)) {
        std::stringstream ss(line);
        std::vector<std::string> a;
        std::string t;
        while (ss >> t) a.push_back(t);
        if (a.empty() || a[0][0] == '#') continue;
        if (a[0] == "quit") break;
        std::string out = run(a);
        std::fputs(out.c_str(), stdout);
        std::fputc('\n', stdout);
        std::fflush(stdout);
    }
    if (rec) std::fclose(rec);
    top->final();
#if VM_TRACE
    if (vcd) vcd->close();
#endif
    return 0;
}
