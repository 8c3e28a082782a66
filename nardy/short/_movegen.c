/* Compiled short-nardy (backgammon) end boards of the legal plays (RULES.md §8, §3.6-3.7,
 * §4): the same breadth-first search as the pure-Python reference in
 * nardy/short/movegen.py (_search), level for level and in the same order, so that both
 * give the same end positions in the same order (tests/short/test_end_boards.py compares
 * them). Only the end boards are made: no Play, Step or Position objects, for engines
 * that judge thousands of positions (the value network's self-play and lookahead).
 *
 * The mover's side is 26 counts in its own points (0: borne off, 1..24, 25: the bar); the
 * opponent only changes by being hit, so a state is the mover's counts and the set of
 * blots hit so far. Each level (one die) keeps the states in the order they are first
 * reached, with an open-addressing hash index.
 *
 * Python API (built by setuptools as nardy.short._movegen; optional):
 *   end_boards(turn, board, bar, d1, d2) -> bytes
 *     turn 0 white / 1 black; board the 24 signed counts by absolute index (white
 *     positive); bar (white, black). The end positions of the legal plays in
 *     legal_plays order, 26 signed bytes each: the 24 counts, then the bars of white and
 *     black (b"" when the turn passes).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define POINTS 24
#define CHECKERS 15
#define BAR 25
#define BAR_BIT (1u << BAR)
#define WIDTH 26

typedef struct {
    uint8_t m[26]; /* the mover's counts: 0 off, 1..24 its points, 25 the bar */
    uint8_t tag;   /* the die left, for a state one die before the last (the key's tag) */
    uint8_t pad;
    uint32_t hits; /* bit p: the opponent's blot on the mover's point p was hit */
} Key;

typedef struct {
    Key k;
    uint32_t occ;  /* bit p: the mover has a checker on p (1..24, 25 the bar) */
    uint8_t rem[4];
    int nrem;
    int top;       /* a double's highest last source among the ways here (BAR otherwise) */
    int first;     /* the die of the first step (0: none yet) */
    int ndice;     /* dice played */
} State;

typedef struct {
    State *v;
    int n, cap;
    int32_t *idx;
    int icap; /* a power of two */
} Set;

static uint64_t key_hash(const Key *k) {
    const uint8_t *p = (const uint8_t *)k;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof(Key); i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static int set_init(Set *s) {
    s->n = 0;
    s->cap = 64;
    s->icap = 128;
    s->v = malloc(sizeof(State) * s->cap);
    s->idx = malloc(sizeof(int32_t) * s->icap);
    if (!s->v || !s->idx) return -1;
    memset(s->idx, -1, sizeof(int32_t) * s->icap);
    return 0;
}

static void set_free(Set *s) {
    free(s->v);
    free(s->idx);
    s->v = NULL;
    s->idx = NULL;
}

static int set_find(const Set *s, const Key *k) {
    size_t mask = (size_t)s->icap - 1;
    for (size_t i = key_hash(k) & mask;; i = (i + 1) & mask) {
        int32_t j = s->idx[i];
        if (j < 0) return -1;
        if (memcmp(&s->v[j].k, k, sizeof(Key)) == 0) return j;
    }
}

static int set_grow(Set *s) {
    if (s->n + 1 > s->cap) {
        State *v = realloc(s->v, sizeof(State) * s->cap * 2);
        if (!v) return -1;
        s->v = v;
        s->cap *= 2;
    }
    if (2 * (s->n + 1) > s->icap) {
        int icap = s->icap * 2;
        int32_t *idx = malloc(sizeof(int32_t) * icap);
        if (!idx) return -1;
        memset(idx, -1, sizeof(int32_t) * icap);
        size_t mask = (size_t)icap - 1;
        for (int j = 0; j < s->n; j++) {
            size_t i = key_hash(&s->v[j].k) & mask;
            while (idx[i] >= 0) i = (i + 1) & mask;
            idx[i] = j;
        }
        free(s->idx);
        s->idx = idx;
        s->icap = icap;
    }
    return 0;
}

/* add a state whose key is not in the set yet; its index, or -1 out of memory */
static int set_add(Set *s, const State *st) {
    if (set_grow(s) < 0) return -1;
    size_t mask = (size_t)s->icap - 1;
    size_t i = key_hash(&st->k) & mask;
    while (s->idx[i] >= 0) i = (i + 1) & mask;
    s->idx[i] = s->n;
    s->v[s->n] = *st;
    return s->n++;
}

static int highest_bit(uint32_t x) { return x ? 31 - __builtin_clz(x) : -1; }

/* the search of nardy/short/movegen.py's _search; the plays' states into ``plays`` */
static int search(const uint8_t start[26], uint32_t closed, uint32_t blots, int a, int b,
                  Set *plays) {
    int double_ = a == b;
    uint8_t dice[4];
    int ndice = double_ ? 4 : 2;
    if (double_) {
        dice[0] = dice[1] = dice[2] = dice[3] = (uint8_t)a;
    } else {
        dice[0] = (uint8_t)(a > b ? a : b);
        dice[1] = (uint8_t)(a > b ? b : a);
    }
    Set level, nxt, finished, complete;
    int ok = -1;
    level.v = nxt.v = finished.v = complete.v = NULL;
    level.idx = nxt.idx = finished.idx = complete.idx = NULL;
    if (set_init(&level) < 0 || set_init(&finished) < 0 || set_init(&complete) < 0) goto out;
    State s0;
    memset(&s0, 0, sizeof s0);
    memcpy(s0.k.m, start, 26);
    for (int p = 1; p <= BAR; p++)
        if (start[p]) s0.occ |= 1u << p;
    memcpy(s0.rem, dice, 4);
    s0.nrem = ndice;
    s0.top = BAR;
    if (set_add(&level, &s0) < 0) goto out;
    int depth = 0;
    for (;;) {
        if (set_init(&nxt) < 0) goto out;
        depth++;
        for (int si = 0; si < level.n; si++) {
            const State st = level.v[si];
            uint32_t occ = st.occ;
            uint32_t sources = (occ & BAR_BIT) ? BAR_BIT : occ & ((2u << st.top) - 1u);
            int home_only = !(occ >> 7);
            int highest = highest_bit(occ);
            uint32_t open_blots = blots & ~st.k.hits;
            for (int i = 0; i < st.nrem; i++) {
                int die = st.rem[i];
                if (i && die == st.rem[i - 1]) continue;
                uint8_t rest[4];
                int nrest = 0;
                for (int j = 0; j < st.nrem; j++)
                    if (j != i) rest[nrest++] = st.rem[j];
                int last = nrest == 0;
                uint8_t tag = nrest == 1 ? rest[0] : 0;
                /* sources whose landing point is on the board and not closed (§8) ... */
                uint32_t movers = sources & ~(closed << die) & ~((2u << die) - 1u);
                int targets[27], nt = 0;
                while (movers) {
                    int src = highest_bit(movers);
                    movers ^= 1u << src;
                    targets[nt++] = src;
                }
                /* ... then bearing off: all home, the exact point or the highest (§4.1-4.4) */
                if (home_only) {
                    if (occ >> die & 1u)
                        targets[nt++] = die;
                    else if (highest < die && occ)
                        targets[nt++] = highest;
                }
                for (int t = 0; t < nt; t++) {
                    int src = targets[t];
                    int dst = src - die;
                    State n;
                    memset(&n, 0, sizeof n);
                    memcpy(n.k.m, st.k.m, 26);
                    n.k.m[src]--;
                    n.k.hits = st.k.hits;
                    int hit = 0;
                    n.first = st.first ? st.first : die;
                    n.ndice = depth;
                    if (dst > 0) {
                        n.k.m[dst]++;
                        hit = (open_blots >> dst) & 1u;
                        if (hit) n.k.hits |= 1u << dst;
                    } else {
                        dst = 0;
                        n.k.m[0]++;
                        if (n.k.m[0] == CHECKERS) { /* the game ends; unplayed dice lapse (§4.6) */
                            int f = set_find(&finished, &n.k);
                            if (f < 0) {
                                if (set_add(&finished, &n) < 0) goto out;
                            } else if (finished.v[f].ndice < depth) {
                                finished.v[f].ndice = depth;
                                finished.v[f].first = n.first;
                            }
                            continue;
                        }
                    }
                    if (last) { /* the last die: a complete play */
                        if (set_find(&complete, &n.k) < 0 && set_add(&complete, &n) < 0) goto out;
                        continue;
                    }
                    n.k.tag = tag;
                    int j = set_find(&nxt, &n.k);
                    if (j < 0) {
                        uint32_t nocc = dst ? occ | 1u << dst : occ;
                        if (st.k.m[src] == 1) nocc &= ~(1u << src);
                        n.occ = nocc;
                        memcpy(n.rem, rest, 4);
                        n.nrem = nrest;
                        n.top = double_ ? src : BAR;
                        if (set_add(&nxt, &n) < 0) goto out;
                    } else if (double_ && src > nxt.v[j].top) {
                        nxt.v[j].top = src;
                    }
                }
            }
        }
        if (nxt.n == 0) {
            set_free(&nxt);
            break;
        }
        set_free(&level);
        level = nxt;
        nxt.v = NULL;
        nxt.idx = NULL;
    }
    /* the plays that use the most dice (§3.6): every die, or the last level's states ... */
    int most;
    Set *states = NULL;
    if (complete.n) {
        most = ndice;
        states = &complete;
    } else {
        most = depth - 1;
        states = most ? &level : NULL;
    }
    /* ... where a play that ends the game counts the dice it really played (§3.6, §4.6) */
    int longest = 0;
    for (int i = 0; i < finished.n; i++)
        if (finished.v[i].ndice > longest) longest = finished.v[i].ndice;
    if (longest > most) {
        most = longest;
        states = NULL;
    }
    /* if either die can be played alone but not both, the larger (§3.6) */
    int larger_only = 0;
    if (ndice == 2 && most == 1) {
        for (int i = 0; i < finished.n && !larger_only; i++)
            if (finished.v[i].ndice == most && finished.v[i].first == dice[0]) larger_only = 1;
        for (int i = 0; states && i < states->n && !larger_only; i++)
            if (states->v[i].first == dice[0]) larger_only = 1;
    }
    for (int pass = 0; pass < 2; pass++) {
        Set *from = pass == 0 ? &finished : states;
        if (!from) continue;
        for (int i = 0; i < from->n; i++) {
            State st = from->v[i];
            if (pass == 0 && st.ndice != most) continue;
            if (larger_only && st.first != dice[0]) continue;
            st.k.tag = 0;
            if (set_find(plays, &st.k) < 0 && set_add(plays, &st) < 0) goto out;
        }
    }
    ok = 0;
out:
    set_free(&level);
    set_free(&nxt);
    set_free(&finished);
    set_free(&complete);
    if (ok < 0) PyErr_NoMemory();
    return ok;
}

/* absolute index of color's own point p (1..24), RULES.md section 9 */
static int idx_of(int color, int p) { return color == 0 ? POINTS - p : p - 1; }

static PyObject *py_end_boards(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "end_boards(turn, board, bar, d1, d2)");
        return NULL;
    }
    long turn = PyLong_AsLong(args[0]);
    long a = PyLong_AsLong(args[3]), b = PyLong_AsLong(args[4]);
    if (PyErr_Occurred()) return NULL;
    PyObject *bt = args[1], *bars = args[2];
    if ((turn != 0 && turn != 1) || a < 1 || a > 6 || b < 1 || b > 6 || !PyTuple_Check(bt) ||
        PyTuple_GET_SIZE(bt) != POINTS || !PyTuple_Check(bars) || PyTuple_GET_SIZE(bars) != 2) {
        PyErr_SetString(PyExc_ValueError, "bad position or dice");
        return NULL;
    }
    long board[POINTS], bar[2];
    for (int i = 0; i < POINTS; i++) {
        board[i] = PyLong_AsLong(PyTuple_GET_ITEM(bt, i));
        if (board[i] == -1 && PyErr_Occurred()) return NULL;
    }
    for (int i = 0; i < 2; i++) {
        bar[i] = PyLong_AsLong(PyTuple_GET_ITEM(bars, i));
        if (bar[i] == -1 && PyErr_Occurred()) return NULL;
    }
    int sign = turn == 0 ? 1 : -1;
    uint8_t m[26];
    uint32_t closed = 0, blots = 0;
    int on = 0;
    for (int p = 1; p <= POINTS; p++) {
        long c = sign * board[idx_of((int)turn, p)];
        m[p] = (uint8_t)(c > 0 ? c : 0);
        on += m[p];
        if (c == -1) blots |= 1u << p;
        if (c < -1) closed |= 1u << p;
    }
    m[BAR] = (uint8_t)bar[turn];
    on += m[BAR];
    m[0] = (uint8_t)(CHECKERS - on);
    Set plays;
    if (set_init(&plays) < 0) return PyErr_NoMemory();
    if (search(m, closed, blots, (int)a, (int)b, &plays) < 0) {
        set_free(&plays);
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)plays.n * WIDTH);
    if (out) {
        int8_t *o = (int8_t *)PyBytes_AS_STRING(out);
        int other = 1 - (int)turn;
        for (int i = 0; i < plays.n; i++, o += WIDTH) {
            const Key *k = &plays.v[i].k;
            int hits = 0;
            for (int x = 0; x < POINTS; x++) /* the opponent's checkers, less those hit */
                o[x] = (int8_t)(sign * board[x] < 0 ? board[x] : 0);
            for (int p = 1; p <= POINTS; p++) {
                if (k->hits >> p & 1u) {
                    o[idx_of((int)turn, p)] = 0;
                    hits++;
                }
                if (k->m[p]) o[idx_of((int)turn, p)] = (int8_t)(sign * k->m[p]);
            }
            o[POINTS + turn] = (int8_t)k->m[BAR];
            o[POINTS + other] = (int8_t)(bar[other] + hits);
        }
    }
    set_free(&plays);
    return out;
}

static PyMethodDef methods[] = {
    {"end_boards", (PyCFunction)(void (*)(void))py_end_boards, METH_FASTCALL,
     "end_boards(turn, board, bar, d1, d2) -> the legal plays' end boards, 26 int8 each."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_movegen",
                                    "Compiled short-nardy end boards (see "
                                    "nardy/short/movegen.py).",
                                    -1, methods};

PyMODINIT_FUNC PyInit__movegen(void) { return PyModule_Create(&module); }
