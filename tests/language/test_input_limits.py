"""Inputs a fuzzer found that once gave Python tracebacks: whole numbers beyond the floats,
nesting deeper than the recursion limit (subnets, includes, software blocks and calls),
includes read twice, files that are not models, and errors of the software layer's
generated net that had no line.  Each is now a located error (file:line:col, the reason,
a hint; exit status 2 from the CLI) or, for includes read twice, no error at all."""
import os
import time

import numpy as np
import pytest

import qpn
from qpn.cli import main
from qpn.errors import ModelError
from qpn.software.ast import MAX_BLOCK_DEPTH
from qpn.structure.semiflows import p_semiflows, t_semiflows
from qpn.validate import MAX_SUBNET_DEPTH

from located import assert_located

CLOSED = ("place a init 1\nplace q queue fcfs service exp(1)\n"
          "transition t : a -> q\ntransition u : q -> a\n")


def _cli(capsys, *args) -> tuple[int, str]:
    rc = main(list(args))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err


# ------------------------------------------------------ 1. whole numbers beyond the floats
@pytest.mark.parametrize("src, line, col", [
    ("param n = 10^308 * 10\n" + CLOSED, 1, 11),
    # reaching a distribution's mean, a capacity, a queue's servers
    ("place a init 1\nplace q queue fcfs service exp(mean = 10^308 * 10)\n"
     "transition t : a -> q\ntransition u : q -> a\n", 2, 39),
    ("place a init 1 capacity 10^308 * 10\nplace q queue fcfs service exp(1)\n"
     "transition t : a -> q\ntransition u : q -> a\n", 1, 25),
    ("place a init 1\nplace q queue fcfs servers 10^308 * 10 service exp(1)\n"
     "transition t : a -> q\ntransition u : q -> a\n", 2, 28),
    # a product of two numbers, each in range
    ("param b = 3\nplace a init 1 capacity (10^200) * 10^200\nplace q queue fcfs service exp(1)\n"
     "transition t : a -> q\ntransition u : q -> a\n", 2, 26),
    # a function's result
    ("param n = max(10^308 * 10, 1)\n" + CLOSED, 1, 15),
])
def test_a_whole_number_beyond_the_floats_is_located(src, line, col):
    err = assert_located(src, "the number is too large", line, col)
    assert "beyond the largest number (1.8e308)" in err.message


def test_a_too_large_number_exits_2_with_file_line_and_reason(tmp_path, capsys):
    f = tmp_path / "big.qpn"
    f.write_text("param n = 10^308 * 10\n" + CLOSED)
    for cmd in ("check", "solve"):
        rc, err = _cli(capsys, cmd, str(f))
        assert rc == 2
        assert err.startswith(f"{f}:1:11: error: the number is too large: '10 ^ 308 * 10' has "
                              "310 digits, beyond the largest number (1.8e308)")
    # and through an override
    f.write_text("param n = 2\n" + CLOSED)
    rc, err = _cli(capsys, "check", str(f), "--set", "n=10^308 * 10")
    assert rc == 2 and "the number is too large" in err


def test_an_infinite_real_mean_is_located():
    err = assert_located("param n = 1e308 * 10\nplace a init 1\nplace q queue fcfs service exp(n)\n"
                         "transition t : a -> q\ntransition u : q -> a\n",
                         "mean must be a positive finite number, got inf", 3, 28)
    assert err.loc.line == 3


# ------------------------------------------------------------ 2. nesting: subnets
def _subnet_chain(n: int) -> str:
    out = ["subnet S0() {\n    input i\n    output o\n    transition t : i -> o\n}\n"]
    for k in range(1, n):
        out.append(f"subnet S{k}() {{\n    input i\n    output o\n    instance c = S{k - 1}()\n"
                   f"    transition a : i -> c.i\n    transition b : c.o -> o\n}}\n")
    out.append(f"instance top = S{n - 1}()\nplace p init 1\ntransition go : p -> top.i\n"
               "transition back timed : top.o -> p delay exp(1)\n")
    return "".join(out)


def test_subnets_nested_1000_deep_are_refused_where_the_limit_is_crossed():
    t0 = time.perf_counter()
    # S999 is instantiated at the top (level 1); level 257 is the instance of S743 in
    # S744, whose declaration starts on line 6 + 7 * 743
    err = assert_located(_subnet_chain(1000), "subnet instances nested too deep", 7 * 744 + 2, 14)
    assert f"is level {MAX_SUBNET_DEPTH + 1}, beyond the limit of {MAX_SUBNET_DEPTH}" in err.message
    assert "(of subnet 'S743')" in err.message and err.hint
    assert time.perf_counter() - t0 < 30


def test_subnets_nested_to_the_limit_load_and_check(tmp_path, capsys):
    net = qpn.parse(_subnet_chain(MAX_SUBNET_DEPTH))
    assert len(net.flatten().places) == 2 * MAX_SUBNET_DEPTH + 1
    f = tmp_path / "deep.qpn"
    f.write_text(_subnet_chain(200))
    t0 = time.perf_counter()
    rc, out = main(["check", str(f)]), capsys.readouterr().out
    assert rc == 0 and "401 places" in out
    # the P- and T-invariants of this chain cost 24 s when the Farkas tableau was
    # compared row by row at every step; now about 2 s
    assert time.perf_counter() - t0 < 30


def test_a_subnet_instantiating_itself_is_still_a_cycle():
    src = "subnet A() { instance b = B() }\nsubnet B() { instance a = A() }\ninstance x = A()\n"
    with pytest.raises(ModelError) as info:
        qpn.parse(src, "bad.qpn")
    assert "subnet instantiates itself: A -> B -> A" in info.value.message


def _ring(n):
    C = np.zeros((n, n), dtype=int)
    for k in range(n):
        C[k, k], C[(k + 1) % n, k] = -1, 1
    return C


def test_semiflows_of_a_long_ring_take_quadratic_time():
    t0 = time.perf_counter()
    assert p_semiflows(_ring(400)) == [[1] * 400]
    assert t_semiflows(_ring(400)) == [[1] * 400]
    assert time.perf_counter() - t0 < 10     # 15 s before; about 0.5 s now


@pytest.mark.parametrize("seed", range(40))
def test_semiflows_are_minimal_invariants(seed):
    rng = np.random.default_rng(seed)
    C = rng.choice([0, 0, 0, 1, -1, 2, -1], size=(rng.integers(1, 8), rng.integers(1, 8)))
    flows = p_semiflows(C)
    for y in flows:
        assert all(v >= 0 for v in y) and any(y)
        assert not (np.array(y, dtype=object) @ C.astype(object)).any()
    sups = [frozenset(i for i, v in enumerate(y) if v) for y in flows]
    assert all(not (a < b) for a in sups for b in sups)
    # a place no transition touches is an invariant of its own
    for i in np.flatnonzero(~C.any(axis=1)):
        assert [int(k == i) for k in range(C.shape[0])] in flows


# ------------------------------------------------------------ 2. nesting: includes
def test_a_chain_of_1500_includes_is_refused_at_the_limit(tmp_path, capsys):
    for k in range(1500):
        nxt = f'include "f{k + 1}.qpn"\n' if k + 1 < 1500 else ""
        (tmp_path / f"f{k}.qpn").write_text(nxt + f"param p{k} = {k}\n")
    main_file = tmp_path / "main.qpn"
    main_file.write_text('include "f0.qpn"\n' + CLOSED)
    with pytest.raises(ModelError) as info:
        qpn.load(str(main_file))
    err = info.value
    assert (err.loc.file, err.loc.line, err.loc.col) == (str(tmp_path / "f98.qpn"), 1, 9)
    assert "includes nested too deep: 'f99.qpn' would be file 101 of a chain of includes" in err.message
    assert "the limit is 100" in err.message and err.hint
    rc, out = _cli(capsys, "check", str(main_file))
    assert rc == 2 and f"{tmp_path / 'f98.qpn'}:1:9: error: includes nested too deep" in out


def test_a_chain_of_100_files_loads(tmp_path):
    for k in range(99):
        nxt = f'include "f{k + 1}.qpn"\n' if k + 1 < 99 else ""
        (tmp_path / f"f{k}.qpn").write_text(nxt + f"param p{k} = {k}\n")
    (tmp_path / "main.qpn").write_text('include "f0.qpn"\n' + CLOSED)
    net = qpn.load(str(tmp_path / "main.qpn"))
    assert len(net.params) == 99
    assert net.with_params(p50=7).param_values()["p50"] == 7


# ------------------------------------------------------ 2. nesting: software blocks
def _branches(n: int) -> str:
    lines = ["software {", "    cpu c cores 1", "    population u size 1 think exp(1) {"]
    ind = "        "
    for _ in range(n):
        lines += [ind + "branch {", ind + "    0.5: {"]
        ind += "        "
    lines.append(ind + "cpu exp(1 ms)")
    for _ in range(n):
        ind = ind[:-8]
        lines += [ind + "    }", ind + "    0.5: { cpu exp(2 ms) }", ind + "}"]
    return "\n".join(lines + ["    }", "}"]) + "\n"


def test_branches_nested_400_deep_are_refused():
    # the first branch (bottom up) at which 101 levels nest: the 300th from the top
    line = 4 + 2 * (400 - MAX_BLOCK_DEPTH - 1)
    err = assert_located(_branches(400), "steps nested too deep", line, 9 + 8 * (400 - MAX_BLOCK_DEPTH - 1))
    assert f"this 'branch' is step {MAX_BLOCK_DEPTH + 1} of steps with blocks" in err.message
    assert f"the limit is {MAX_BLOCK_DEPTH}" in err.message and err.hint


def test_branches_nested_to_the_limit_load():
    net = qpn.parse(_branches(MAX_BLOCK_DEPTH))
    assert qpn.parse(net.text()) == net                # printed back and parsed again
    assert len(net.flatten().places) > MAX_BLOCK_DEPTH


@pytest.mark.parametrize("open_, close", [
    ("loop about 2 times {", "}"), ("fork {", "}"), ("loop 1 times {", "}"),
    ("take q timeout exp(1) else {", "}"), ("critical {", "}")])
def test_every_kind_of_block_counts(open_, close):
    n = MAX_BLOCK_DEPTH + 1
    src = ("software {\n    cpu c cores 1\n    blocking queue q capacity 2\n"
           "    population u size 1 think exp(1) {\n        " + " ".join([open_] * n)
           + " cpu exp(1 ms) " + " ".join([close] * n) + "\n    }\n}\n")
    err = assert_located(src, "steps nested too deep", 5, 9)
    assert f"is step {n} of steps with blocks" in err.message


def _calls(n: int) -> str:
    lines = ["software {", "    cpu c cores 1"]
    for k in range(n):
        body = f"call b{k + 1}" if k + 1 < n else "cpu exp(1 ms)"
        lines.append(f"    behavior b{k} {{ {body} }}")
    lines += ["    population u size 1 think exp(1) { call b0 }", "}"]
    return "\n".join(lines) + "\n"


def test_a_chain_of_600_calls_is_refused_at_the_call_beyond_the_limit(tmp_path, capsys):
    # call b0 in the population is level 1; 'call b100' in b99 is level 101
    err = assert_located(_calls(600), "steps nested too deep", 3 + 99, 25)
    assert "b0 -> b1 -> b2 -> ... -> b99 -> b100" in err.message
    assert "population 'u'" in err.message and "inlined" in err.hint
    f = tmp_path / "calls.qpn"
    f.write_text(_calls(600))
    rc, out = _cli(capsys, "check", str(f))
    assert rc == 2 and out.startswith(f"{f}:102:25: error: steps nested too deep")


def test_a_chain_of_calls_to_the_limit_loads():
    assert len(qpn.parse(_calls(MAX_BLOCK_DEPTH - 1)).flatten().places) >= 3


def test_calls_and_blocks_add_up():
    # a behavior nesting 60 branches, called from 50 levels of branches: 111 in all
    inner = "".join(["branch { 1: { "] * 60) + "cpu exp(1 ms)" + "".join([" } }"] * 60)
    outer = "".join(["branch { 1: { "] * 50) + "call deep" + "".join([" } }"] * 50)
    src = (f"software {{\n    cpu c cores 1\n    behavior deep {{ {inner} }}\n"
           f"    population u size 1 think exp(1) {{ {outer} }}\n}}\n")
    err = assert_located(src, "steps nested too deep", 4, src.splitlines()[3].index("call deep") + 6)
    assert "with the behaviors it calls inlined (deep)" in err.message


# ------------------------------------------------------------ 3. includes form a set
def _diamond(tmp_path):
    (tmp_path / "lib.qpn").write_text("colors req = {get, post}\nparam think = 1 s\n"
                                      "shared queue disk : fcfs\n")
    (tmp_path / "a.qpn").write_text('include "lib.qpn"\nplace pa : req init get, post\n')
    (tmp_path / "b.qpn").write_text('include "./lib.qpn"\n'
                                    "place pb : req queue ps service exp(think)\n")
    (tmp_path / "main.qpn").write_text('include "a.qpn"\ninclude "b.qpn"\n'
                                       "transition t : pa(x) -> pb(x)\n"
                                       "transition u : pb(x) -> pa(x)\n")
    return tmp_path / "main.qpn"


def test_a_diamond_of_includes_loads_each_file_once(tmp_path, capsys):
    net = qpn.load(str(_diamond(tmp_path)))
    assert [p.name for p in net.places] == ["pa", "pb"]
    assert [c.name for c in net.colorsets] == ["req"]
    assert [p.name for p in net.params] == ["think"]
    assert [q.name for q in net.queues] == ["disk"]
    # both includes of lib.qpn are the one net read once
    a, b = net.items[0].net, net.items[1].net
    assert a.items[0].net is b.items[0].net
    flat = net.flatten()
    assert [p.name for p in flat.places] == ["pa", "pb"]
    assert flat.text().count("colors req") == 1
    assert net.with_params(think=2).param_values() == {"think": 2}
    rc, out = main(["check", str(tmp_path / "main.qpn")]), capsys.readouterr()
    assert rc == 0 and "2 places, 2 transitions" in out.out, out.err


def test_the_same_file_under_two_spellings_is_one_include(tmp_path):
    (tmp_path / "x.qpn").write_text("colors req = {get}\nparam n = 2\n")
    (tmp_path / "sub").mkdir()
    os.symlink(tmp_path / "x.qpn", tmp_path / "sub" / "link.qpn")
    (tmp_path / "main.qpn").write_text('include "x.qpn"\ninclude "./x.qpn"\n'
                                       'include "sub/../x.qpn"\ninclude "sub/link.qpn"\n'
                                       "place p : req init n get\n")
    net = qpn.load(str(tmp_path / "main.qpn"))
    assert [c.name for c in net.colorsets] == ["req"] and [p.name for p in net.params] == ["n"]
    assert net.text().count("include") == 4       # the file as written is printed back


def test_an_include_cycle_through_a_second_spelling_is_still_an_error(tmp_path):
    (tmp_path / "a.qpn").write_text('include "./b.qpn"\n')
    (tmp_path / "b.qpn").write_text('include "../' + tmp_path.name + '/a.qpn"\n')
    with pytest.raises(ModelError) as info:
        qpn.load(str(tmp_path / "a.qpn"))
    assert "include cycle: a.qpn -> b.qpn -> a.qpn" in info.value.message
    assert info.value.loc.file.endswith("b.qpn") and info.value.loc.line == 1


# ------------------------------------------------------- 4. files that are not models
SECRET = "hunter2-do-not-print"


def _refused(tmp_path, capsys, target: str, reason: str):
    f = tmp_path / "m.qpn"
    f.write_text(f'place p init 1\ninclude "{target}"\n')
    with pytest.raises(ModelError) as info:
        qpn.load(str(f))
    err = info.value
    assert (err.loc.file, err.loc.line, err.loc.col) == (str(f), 2, 9)
    assert f"cannot include '{target}': " in err.message and reason in err.message
    rc, out = _cli(capsys, "check", str(f))
    assert rc == 2 and out.startswith(f"{f}:2:9: error: cannot include '{target}'")
    return out


def test_an_environment_block_is_refused_without_quoting_it(tmp_path, capsys):
    (tmp_path / "environ").write_bytes(f"HOME=/root\0API_TOKEN={SECRET}\0PATH=/bin\0".encode())
    out = _refused(tmp_path, capsys, "environ", "it is not a qpn model text (it holds NUL bytes")
    assert SECRET not in out and "HOME" not in out and "API_TOKEN" not in out


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="no /proc")
def test_proc_self_environ_is_refused_without_quoting_it(tmp_path, capsys):
    out = _refused(tmp_path, capsys, "/proc/self/environ", "NUL bytes")
    initial = open("/proc/self/environ", "rb").read().split(b"\0")
    for entry in initial:
        if b"=" in entry and len(entry.split(b"=", 1)[1]) >= 6:
            assert entry.split(b"=", 1)[1].decode(errors="replace") not in out


def test_a_text_that_is_no_model_is_refused_without_quoting_it(tmp_path, capsys):
    (tmp_path / "creds").write_text(f"[default]\naws_secret_access_key = {SECRET}\n")
    (tmp_path / "dotenv").write_text(f"API_TOKEN={SECRET}\n")
    for name in ("creds", "dotenv"):
        out = _refused(tmp_path, capsys, name, "it is not a qpn model text (its first "
                       "declaration does not parse: line 1, column 1)")
        assert SECRET not in out and "API_TOKEN" not in out and "default" not in out


def test_a_model_with_a_later_syntax_error_still_points_into_it(tmp_path):
    (tmp_path / "lib.qpn").write_text("param n = 2\nplace p init = 3\n")
    (tmp_path / "main.qpn").write_text('include "lib.qpn"\n')
    with pytest.raises(ModelError) as info:
        qpn.load(str(tmp_path / "main.qpn"))
    assert info.value.loc.file.endswith("lib.qpn") and info.value.loc.line == 2


def test_directories_and_devices_are_not_included(tmp_path, capsys):
    (tmp_path / "dir.qpn").mkdir()
    _refused(tmp_path, capsys, "dir.qpn", "it is a directory")
    if os.path.exists("/dev/null"):
        _refused(tmp_path, capsys, "/dev/null", "not a regular file")


def test_a_binary_model_file_is_refused_without_quoting_it(tmp_path, capsys):
    f = tmp_path / "bin.qpn"
    f.write_bytes(f"place p\0{SECRET}".encode())
    rc, out = _cli(capsys, "check", str(f))
    assert rc == 2 and SECRET not in out
    assert out.startswith(f"{f}:1:8: error: the file is not a model text: it holds NUL bytes")


# ----------------------------------------- 5. errors of the software layer's generated net
def test_forking_1e16_threads_is_located_at_the_count(tmp_path, capsys):
    src = ("software {\n    cpu c cores 2\n    population u size 1 think exp(1) {\n"
           "        fork 1e16 {\n            cpu exp(1 ms)\n        }\n    }\n}\n")
    err = assert_located(src, "the number of forked threads must be at most 2^53", 4, 14)
    assert "got 1e+16" in err.message
    f = tmp_path / "fork.qpn"
    f.write_text(src)
    rc, out = _cli(capsys, "check", str(f))
    assert rc == 2 and out.startswith(f"{f}:4:14: error: the number of forked threads")


def test_an_override_of_a_fork_count_is_checked_too():
    net = qpn.parse("param n = 2\nsoftware {\n    cpu c\n    population u size 1 think exp(1) {\n"
                    "        fork n { cpu exp(1 ms) }\n    }\n}\n", "m.qpn")
    with pytest.raises(ModelError) as info:
        net.with_params(n=10 ** 17).flatten()
    assert info.value.loc is not None and info.value.loc.line == 5
    assert "at most 2^53" in info.value.message


def test_counted_loops_nested_30_deep_are_located_at_the_innermost_loop():
    lines = ["software {", "    cpu c cores 1", "    population users size 1 think exp(1) {"]
    ind = "        "
    for _ in range(30):
        lines.append(ind + "loop 2 times {")
        ind += "  "
    lines.append(ind + "cpu exp(1 ms)")
    for _ in range(30):
        ind = ind[:-2]
        lines.append(ind + "}")
    src = "\n".join(lines + ["    }", "}"]) + "\n"
    err = assert_located(src, "color set 'users.loop30.ctx' has 1,073,741,824 colors", 33, 9 + 2 * 29)
    assert "loop about N times" in err.hint


def test_an_arc_without_a_location_is_located_at_its_transition():
    # (the software layer's generated arcs have none: their errors had no line)
    from qpn.compile import compile_net
    from qpn.expr import Num
    from qpn.model import Arc, Mode, Place, Term, Transition
    from qpn.errors import Loc
    from qpn.net import Net
    loc = Loc("gen.qpn", 7, 3)
    net = Net("m", (Place("a", init=(Term(Num(1), None),)), Place("b"),
                    Transition("t", "immediate", (Mode(None, (Arc("a", (Term(Num(10 ** 17), None),)),),
                                                       (Arc("b", (Term(Num(1), None),)),)),), loc=loc)))
    with pytest.raises(ModelError) as info:
        compile_net(net)
    assert info.value.loc is loc and "at most 2^53" in info.value.message


def test_record_color_sets_nested_1500_deep_are_refused():
    src = "colors r0 = {a}\n" + "".join(f"colors r{k} = (f: r{k - 1})\n" for k in range(1, 1500))
    err = assert_located(src, "record color sets nested too deep", 102, 8)
    assert "'r101' nests records within records 101 levels deep; the limit is 100" in err.message
    # a cycle of records is still reported as one
    with pytest.raises(ModelError) as info:
        qpn.parse("colors a = (x: b)\ncolors b = (y: a)\n")
    assert info.value.message == "color set 'a' contains itself"


def test_a_chain_of_3000_parameters_each_defined_by_the_next_loads():
    src = "".join(f"param p{k} = p{k + 1} + 1\n" for k in range(2999)) + "param p2999 = 1\n"
    net = qpn.parse(src + "place a init p0\n")
    assert net.param_values()["p0"] == 3000
    with pytest.raises(ModelError) as info:
        qpn.parse("param a = b\nparam b = c + 1\nparam c = a\n", "bad.qpn")
    assert info.value.message == "parameters depend on each other in a cycle: a -> b -> c -> a"
