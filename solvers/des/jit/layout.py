"""Flat arrays of the event loop: the net, the lanes' parameters and state.

The jitted loop takes four one-dimensional arrays instead of dozens: numba
passes every array argument of a call by value (seven machine words each), so
a helper taking the net's forty arrays cost more than the work it did.  Every
array is cut into *regions*; region ``X`` starts at ``a[ni[X]]`` where ``X``
is a constant of this module:

* ``ni`` — the net's integers (the same for every lane) behind a header: the
  net's sizes, where each region of every array starts, and the capacity and
  offset of every token store;
* ``nf`` — the net's floats: priorities and sampler tables (branches,
  measured samples);
* ``si[lane]`` / ``sf[lane]`` — the lane's parameters (a sweep point's
  values: ``PI_*``/``PF_*`` regions) and its state, token stores included.

A place that offers one token at a time (departure ``fifo``, ``random``) has, beside
each color's slot s, an *offer slot* ``N_SLOTS + k`` (``slot_ord[s] = N_SLOTS + k``):
the marking ``m`` holds there how many tokens of that color the place offers (0 or 1),
the transitions' input arcs read it, and the place's *order ring* holds the offer
slots of the tokens waiting behind (``ovis[place]`` = offered offer slot + 1, or 0).

Token stores (rings of entry times, per-token queue tables, per-firing
clocks) are regions of the state rows whose sizes grow between calls, when
the loop reports that an event would overflow one: the driver then lays the
rows out anew and rebuilds ``ni``'s header.
"""
from __future__ import annotations

import numpy as np

# ------------------------------------------------------------- net (ni)
(N_SLOTS, N_MODES, N_QUEUES, N_TIMED, N_UNITS, N_CLASSES, N_SAMPLERS, N_RINGS, N_WORK, N_MULTI,
 NF_PRIO, NF_CLS_PRIO, NF_SMP_TAB) = range(13)       # NF_*: where nf's regions start
NI_SCALARS = 13
NI_REGIONS = ("slot_queue", "slot_class", "slot_ring", "slot_unit",
              "simm_ptr", "simm_idx", "stim_ptr", "stim_idx", "sinh_ptr", "sinh_idx", "scap_ptr", "scap_idx",
              "in_ptr", "in_slot", "in_cnt", "out_ptr", "out_slot", "out_cnt",
              "minh_ptr", "minh_grp", "mcap_ptr", "mcap_grp", "mcap_add",
              "timed_modes", "mode_col", "clock_kind", "mode_sampler", "mode_multi",
              "q_kind", "q_serves", "q_order", "q_hold", "q_sliced", "q_kptr", "q_store", "q_fifo", "q_dring_ptr", "q_dring",
              "q_spd_ptr", "cls_qslot", "cls_dslot", "cls_sampler", "cls_place", "cls_fifo", "smp_kind",
              "slot_ord", "ord_real", "ord_ring", "ord_place", "ord_random", "out_room", "out_oroom")
(SLOT_QUEUE, SLOT_CLASS, SLOT_RING, SLOT_UNIT,
 SIMM_PTR, SIMM_IDX, STIM_PTR, STIM_IDX, SINH_PTR, SINH_IDX, SCAP_PTR, SCAP_IDX,
 IN_PTR, IN_SLOT, IN_CNT, OUT_PTR, OUT_SLOT, OUT_CNT,
 MINH_PTR, MINH_GRP, MCAP_PTR, MCAP_GRP, MCAP_ADD,
 TIMED_MODES, MODE_COL, CLOCK_KIND, MODE_SAMPLER, MODE_MULTI,
 Q_KIND, Q_SERVES, Q_ORDER, Q_HOLD, Q_SLICED, Q_KPTR, Q_STORE, Q_FIFO, Q_DRING_PTR, Q_DRING,
 Q_SPD_PTR, CLS_QSLOT, CLS_DSLOT, CLS_SAMPLER, CLS_PLACE, CLS_FIFO, SMP_KIND,
 SLOT_ORD, ORD_REAL, ORD_RING, ORD_PLACE, ORD_RANDOM, OUT_ROOM, OUT_OROOM) = range(NI_SCALARS, NI_SCALARS + len(NI_REGIONS))
NF_REGIONS = ("prio", "cls_prio", "smp_tab")

# ------------------------------------------------ lane parameters (pi, pf)
PI_REGIONS = ("m0", "cap_limit", "inh_thr", "smp_off", "smp_n", "point")
PF_REGIONS = ("weight", "tservers", "qservers", "quantum", "switch", "qspeed", "mu", "smp_par")
# ---------------------------------------------------- lane state (si, sf)
SI_REGIONS = ("steps", "phase", "en_n", "imm_nd", "tim_nd", "info",
              "m", "inh_sum", "cap_sum", "imm_en", "en_list", "en_pos", "imm_mark", "imm_dirty",
              "tim_mark", "tim_dirty", "fired", "q_counter", "cursor", "rh", "rn", "wn", "cn",
              "rc", "wcls", "wseq", "wflag", "wrseq", "wsrv", "ovis", "evtree", "qocc_n", "qocc")
SF_REGIONS = ("t", "dead", "t_start", "eff", "ev", "q_last", "area", "last", "fires", "res", "busy",
              "busy_prev", "rt", "wt0", "wwork", "wqleft", "wsetup", "cclk", "cstart")
# store tables inside lay: capacity and offset (within its arena region) of each store
LAY_STORES = ("r_cap", "r_off", "w_cap", "w_off", "c_cap", "c_off")
_LAY_NAMES = PI_REGIONS + PF_REGIONS + SI_REGIONS + SF_REGIONS + LAY_STORES
_LAY0 = NI_SCALARS + len(NI_REGIONS)      # the layout part of ni's header starts here
(PI_M0, PI_CAP_LIMIT, PI_INH_THR, PI_SMP_OFF, PI_SMP_N, PI_POINT,
 PF_WEIGHT, PF_TSERVERS, PF_QSERVERS, PF_QUANTUM, PF_SWITCH, PF_QSPEED, PF_MU, PF_SMP_PAR,
 SI_STEPS, SI_PHASE, SI_EN_N, SI_IMM_ND, SI_TIM_ND, SI_INFO,
 SI_M, SI_INH_SUM, SI_CAP_SUM, SI_IMM_EN, SI_EN_LIST, SI_EN_POS, SI_IMM_MARK, SI_IMM_DIRTY,
 SI_TIM_MARK, SI_TIM_DIRTY, SI_FIRED, SI_Q_COUNTER, SI_CURSOR, SI_RH, SI_RN, SI_WN, SI_CN,
 SI_RC, SI_WCLS, SI_WSEQ, SI_WFLAG, SI_WRSEQ, SI_WSRV, SI_OVIS, SI_EVTREE, SI_QOCC_N, SI_QOCC,
 SF_T, SF_DEAD, SF_T_START, SF_EFF, SF_EV, SF_Q_LAST, SF_AREA, SF_LAST, SF_FIRES, SF_RES, SF_BUSY,
 SF_BUSY_PREV, SF_RT, SF_WT0, SF_WWORK, SF_WQLEFT, SF_WSETUP, SF_CCLK, SF_CSTART,
 L_R_CAP, L_R_OFF, L_W_CAP, L_W_OFF, L_C_CAP, L_C_OFF) = range(_LAY0, _LAY0 + len(_LAY_NAMES))
HEADER = _LAY0 + len(_LAY_NAMES)
ROW_INT = PI_REGIONS + SI_REGIONS          # regions of si
#: more event clocks (timed modes and queues) than this: the next one is found in a
#: tournament tree (``evtree``: node i holds the clock of least time below it, leaves at
#: P + c), O(log n) per change, not by a scan of all of them per event (a loop counted
#: by colors has thousands of timed modes, one of them enabled)
EV_TREE_MIN = 32
ROW_FLOAT = PF_REGIONS + SF_REGIONS        # regions of sf
# status codes of run_lane (YIELD: a long run of immediate firings paused, so that the
# caller can look at the wall clock; the lane resumes where it stopped)
OK, DONE, DEADLOCK, GROW_RING, GROW_WORK, GROW_MULTI, TRAP, YIELD = range(8)


def pack(net, par, sizes: "Sizes") -> np.ndarray:
    """``ni`` from :class:`..flat.NetArrays`, :class:`..flat.LaneParams` and the row layout."""
    nf_off = np.cumsum([0, len(net.prio), len(net.cls_prio)])
    scalars = [net.nslots, net.nmodes, net.nqueues, net.ntimed, net.nunits, int(net.q_kptr[-1]),
               len(par.smp_kind), net.nrings, net.nwork, net.nmulti] + [int(x) for x in nf_off]
    offsets, stores = sizes.layout()
    parts = [sizes.stores[n] for n in LAY_STORES]
    parts += [np.asarray(getattr(net, n) if n != "smp_kind" else par.smp_kind, np.int64) for n in NI_REGIONS]
    starts = HEADER + np.concatenate([[0], np.cumsum([len(p) for p in parts])[:-1]]).astype(np.int64)
    ni = np.zeros(HEADER + sum(len(p) for p in parts), dtype=np.int64)
    for o, p in zip(starts, parts):
        ni[o:o + len(p)] = p
    ni[:NI_SCALARS] = scalars
    ni[NI_SCALARS:_LAY0] = starts[len(LAY_STORES):]
    ni[_LAY0:_LAY0 + len(offsets)] = offsets
    ni[L_R_CAP:L_R_CAP + len(LAY_STORES)] = starts[:len(LAY_STORES)]
    return ni


def pack_floats(net, par) -> np.ndarray:
    """``nf``: priorities of the modes, of the queue classes, sampler tables."""
    return np.concatenate([net.prio, net.cls_prio, par.smp_tab]).astype(np.float64)


class Sizes:
    """Region sizes of the per-lane rows, from the net and the store capacities."""

    def __init__(self, net, par, ring_cap: np.ndarray, work_cap: np.ndarray, multi_cap: np.ndarray):
        S, M, Q = net.nslots, net.nmodes, net.nqueues
        K = int(net.q_kptr[-1])
        NS = len(par.smp_kind)
        RC, WC, CC = int(ring_cap.sum()), int(work_cap.sum()), int(multi_cap.sum())
        NR, NW, NC = len(ring_cap), len(work_cap), len(multi_cap)
        V = len(net.ord_real)           # slots of places that offer one token at a time
        self.si = dict(m0=S, cap_limit=net.ncap, inh_thr=net.ninh, smp_off=NS, smp_n=NS, point=1,
                       steps=1, phase=1, en_n=1, imm_nd=1, tim_nd=1, info=4, m=S + V, inh_sum=net.ninh,
                       cap_sum=net.ncap, imm_en=M, en_list=M, en_pos=M, imm_mark=M, imm_dirty=M,
                       tim_mark=M, tim_dirty=M, fired=M, q_counter=Q, cursor=NS, rh=NR, rn=NR, wn=NW,
                       cn=NC, rc=RC, wcls=WC, wseq=WC, wflag=WC, wrseq=WC, wsrv=WC, ovis=net.nord,
                       evtree=ev_tree_size(net.ntimed + Q), qocc_n=Q, qocc=K)
        self.sf = dict(weight=M, tservers=M, qservers=Q, quantum=Q, switch=Q, qspeed=par.qspeed.shape[1], mu=K, smp_par=4 * NS,
                       t=1, dead=1, t_start=1, eff=M, ev=net.ntimed + Q, q_last=Q, area=S + V, last=S + V,
                       fires=M, res=3 * net.nunits, busy=K, busy_prev=K, rt=RC, wt0=WC, wwork=WC,
                       wqleft=WC, wsetup=WC, cclk=CC, cstart=CC)
        self.stores = dict(r_cap=ring_cap, r_off=_offsets(ring_cap), w_cap=work_cap, w_off=_offsets(work_cap),
                           c_cap=multi_cap, c_off=_offsets(multi_cap))

    def layout(self) -> tuple[list[int], dict]:
        """Start of every row region (in the order of ni's header) and where[name] = (start, size)."""
        offsets: list[int] = []
        where: dict = {}
        for names, sizes, key in ((ROW_INT, self.si, "_width_int"), (ROW_FLOAT, self.sf, "_width_float")):
            o = 0
            for n in names:
                where[n] = (o, int(sizes[n]))
                o += int(sizes[n])
            where[key] = max(o, 1)
        for n in PI_REGIONS + PF_REGIONS + SI_REGIONS + SF_REGIONS:
            offsets.append(where[n][0])
        return offsets, where


def ev_tree_size(nclocks: int) -> int:
    """Cells of the event clocks' tournament tree: 2 P (P the least power of two >= the
    clocks), none for at most EV_TREE_MIN clocks.

    >>> ev_tree_size(5), ev_tree_size(33), ev_tree_size(3007)
    (0, 128, 8192)
    """
    return 2 * pow2(nclocks, 1) if nclocks > EV_TREE_MIN else 0


def ev_tree_init(nclocks: int) -> np.ndarray:
    """The tree of ``nclocks`` clocks that are all infinite: each node holds the first clock
    below it (-1 below it only padding), as a scan taking the first least time would.

    >>> ev_tree_init(40)[1:4].tolist(), ev_tree_init(40)[64 + 39:64 + 41].tolist()
    ([0, 0, 32], [39, -1])
    """
    size = ev_tree_size(nclocks)
    tree = np.full(size, -1, dtype=np.int64)
    if size:
        P = size // 2
        tree[P:P + nclocks] = np.arange(nclocks)
        for i in range(P - 1, 0, -1):
            a = tree[2 * i]
            tree[i] = a if a >= 0 else tree[2 * i + 1]
    return tree


def _offsets(caps: np.ndarray) -> np.ndarray:
    off = np.zeros(len(caps), dtype=np.int64)
    if len(caps) > 1:
        off[1:] = np.cumsum(caps[:-1])
    return off


def pow2(n: int, least: int = 8) -> int:
    """The least power of two (from ``least`` up) that is at least n: a ring's capacity.

    >>> pow2(100), pow2(3)
    (128, 8)
    """
    c = least
    while c < n:
        c *= 2
    return c


def rows(where: dict, L: int) -> tuple[np.ndarray, np.ndarray]:
    """Zeroed si, sf for L lanes (refused first when above the memory limit: token
    stores are as long as the populations that can reach them)."""
    from qpn import resources
    wi, wf = where["_width_int"], where["_width_float"]
    resources.require(f"the simulator's state ({L:,} lanes x {wi + wf:,} entries of token "
                      "stores, clocks and counters)", 8.0 * L * (wi + wf),
                      hint="use smaller populations or fewer replications")
    return (np.zeros((L, where["_width_int"]), dtype=np.int64),
            np.zeros((L, where["_width_float"]), dtype=np.float64))


def region(a: np.ndarray, where: dict, name: str) -> np.ndarray:
    """View of region ``name`` of every lane's row of ``a`` (L, size)."""
    o, n = where[name]
    return a[:, o:o + n]


__all__ = ["pack", "pack_floats", "Sizes", "rows", "region", "pow2"]
