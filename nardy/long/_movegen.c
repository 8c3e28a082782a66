/* Compiled long-nardy legal-play generator (RULES.md §3, §4): the same search as the
 * pure-Python reference in nardy/long/movegen.py, step for step, so that both give the
 * same plays in the same order with the same canonical steps (tests/test_accelerator.py
 * compares them on every corpus the tests have).
 *
 * The mover's board is packed into two 64-bit words, a nibble per own point (index 0:
 * borne off; a side has 15 checkers, so a count fits in four bits). A step is two
 * additions; the six-point rule is a 24-bit mask along the opponent's path; each level
 * of the breadth-first search (one die per level) merges step sequences that reach the
 * same board with an open-addressing hash set, keeping the first sequence (the canonical
 * notation: higher dice first, points from the head down).
 *
 * Python API (built by setuptools as nardy.long._movegen; optional):
 *   setup(Step, Play, Position, white, black)   the Python types and the two Colors
 *   legal_plays(turn, board, d1, d2) -> list[Play]
 *   end_texts(turn, board, d1, d2) -> list[str]  sorted end-position texts ([] = pass)
 *   end_boards(turn, board, d1, d2) -> bytes     the plays' end boards, 24 signed bytes
 *                                                each, in legal_plays order (b"" = pass)
 *   text(turn, board) -> str                    the position text (RULES.md §1)
 *   notation(steps) -> str                      "24/18 18/13", "6/off", "-" for none
 *   legal_plays_wire(plays) -> bytes            the plays as protobuf GameState.legal_plays
 *                                               entries (field 17: notation, end position,
 *                                               steps), the bytes server/core/views.py's
 *                                               Python encoding gives
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define POINTS 24
#define CHECKERS 15
#define HEAD 24
#define HOME_BITS 0x7Eu /* occupancy bits of points 1..6 */

typedef struct {
    uint64_t lo; /* nibbles of points 0..15 */
    uint64_t hi; /* nibbles of points 16..24; bits 40..43: which die is left (the key tag) */
} Board;

typedef struct {
    Board b;
    uint32_t occ;  /* bit p: the mover has a checker on point p (1..24) */
    uint32_t mask; /* the mover's points along the opponent's path (see BIT) */
    uint8_t rem[4], nrem, nsteps;
    uint8_t steps[4][2]; /* (src, die) per step: dst follows */
} Node;

typedef struct {
    Node *nodes;
    int n, cap;
    int32_t *slots; /* hash set of node indices, -1 empty */
    int scap;
} Level;

typedef struct {
    int white;
    uint8_t closed[POINTS + 1];
    uint32_t forbidden;
    int head0, head_limit;
    int others[POINTS]; /* the opponent's signed counts by absolute index */
} Turn;

static uint32_t BIT[POINTS + 1];
static PyObject *StepType, *PlayType, *PositionType, *COLOR[2];
static PyObject *STEP[POINTS + 1][7]; /* Step(src, dst, die) for src 1..24, die 1..6 */
static PyObject *INTS[2 * CHECKERS + 1]; /* -15..15 */

static inline int count_at(const Board *b, int p) {
    return p < 16 ? (int)((b->lo >> (4 * p)) & 15) : (int)((b->hi >> (4 * (p - 16))) & 15);
}

static inline void move(Board *b, int src, int dst) {
    if (src < 16) b->lo -= (uint64_t)1 << (4 * src);
    else b->hi -= (uint64_t)1 << (4 * (src - 16));
    if (dst < 16) b->lo += (uint64_t)1 << (4 * dst);
    else b->hi += (uint64_t)1 << (4 * (dst - 16));
}

static inline uint32_t runs(uint32_t m) {
    return m & (m >> 1) & (m >> 2) & (m >> 3) & (m >> 4) & (m >> 5);
}

static inline int highest_bit(uint32_t x) { return x ? 31 - __builtin_clz(x) : -1; }

static inline uint64_t hash_board(const Board *b) {
    uint64_t h = b->lo * 0x9E3779B97F4A7C15ull ^ (b->hi + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
    return h ^ (h >> 29);
}

/* -- levels: nodes in insertion order plus a hash set over their boards ------------------ */

static void level_free(Level *l) {
    free(l->nodes);
    free(l->slots);
    memset(l, 0, sizeof(*l));
}

static int level_init(Level *l, int cap) {
    l->n = 0;
    l->cap = cap;
    l->scap = 64;
    while (l->scap < 2 * cap) l->scap <<= 1;
    l->nodes = malloc(sizeof(Node) * (size_t)cap);
    l->slots = malloc(sizeof(int32_t) * (size_t)l->scap);
    if (!l->nodes || !l->slots) return -1;
    memset(l->slots, 0xFF, sizeof(int32_t) * (size_t)l->scap);
    return 0;
}

static void level_reset(Level *l) {
    l->n = 0;
    memset(l->slots, 0xFF, sizeof(int32_t) * (size_t)l->scap);
}

static int level_grow(Level *l) {
    int cap = l->cap * 2, scap = l->scap * 2;
    Node *nodes = realloc(l->nodes, sizeof(Node) * (size_t)cap);
    if (!nodes) return -1;
    l->nodes = nodes;
    int32_t *slots = malloc(sizeof(int32_t) * (size_t)scap);
    if (!slots) return -1;
    memset(slots, 0xFF, sizeof(int32_t) * (size_t)scap);
    for (int i = 0; i < l->n; i++) {
        uint64_t h = hash_board(&l->nodes[i].b) & (uint64_t)(scap - 1);
        while (slots[h] >= 0) h = (h + 1) & (uint64_t)(scap - 1);
        slots[h] = i;
    }
    free(l->slots);
    l->slots = slots;
    l->cap = cap;
    l->scap = scap;
    return 0;
}

/* The node with board ``b`` (tag included) if the level has one, else a new one appended
 * (*fresh set); NULL when out of memory. */
static Node *level_find_or_add(Level *l, const Board *b, int *fresh) {
    if (l->n + 1 > l->cap && level_grow(l) < 0) return NULL;
    uint64_t mask = (uint64_t)(l->scap - 1), h = hash_board(b) & mask;
    for (;;) {
        int32_t i = l->slots[h];
        if (i < 0) break;
        if (l->nodes[i].b.lo == b->lo && l->nodes[i].b.hi == b->hi) {
            *fresh = 0;
            return &l->nodes[i];
        }
        h = (h + 1) & mask;
    }
    l->slots[h] = l->n;
    *fresh = 1;
    Node *node = &l->nodes[l->n++];
    node->b = *b;
    return node;
}

/* -- the turn ----------------------------------------------------------------------------- */

/* Read the position into the mover's coordinates; -1 with an exception for a bad board. */
static int turn_setup(Turn *t, Node *start, PyObject *turn_obj, PyObject *board_obj, int d1, int d2) {
    long turn = PyLong_AsLong(turn_obj);
    if (turn == -1 && PyErr_Occurred()) return -1;
    if (turn != 0 && turn != 1) {
        PyErr_SetString(PyExc_ValueError, "turn must be 0 (white) or 1 (black)");
        return -1;
    }
    PyObject *seq = PySequence_Fast(board_obj, "board must be a sequence of 24 counts");
    if (!seq) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != POINTS) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "expected 24 point counts");
        return -1;
    }
    int board[POINTS], white = 0, black = 0;
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (int a = 0; a < POINTS; a++) {
        long c = PyLong_AsLong(items[a]);
        if (c == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        if (c > CHECKERS || c < -CHECKERS) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "a point holds at most 15 checkers");
            return -1;
        }
        board[a] = (int)c;
        if (c > 0) white += (int)c;
        else black -= (int)c;
    }
    Py_DECREF(seq);
    if (white > CHECKERS || black > CHECKERS) {
        PyErr_SetString(PyExc_ValueError, "a side has at most 15 checkers on the board");
        return -1;
    }
    t->white = turn == 0;
    int m[POINTS + 1], on = 0;
    for (int p = 1; p <= POINTS; p++) {
        int a = t->white ? POINTS - p : (36 - p) % POINTS;
        int c = t->white ? board[a] : -board[a];
        m[p] = c > 0 ? c : 0;
        t->closed[p] = c < 0;
        on += m[p];
    }
    t->closed[0] = 0;
    m[0] = CHECKERS - on;
    for (int a = 0; a < POINTS; a++) {
        int c = board[a];
        t->others[a] = t->white ? (c < 0 ? c : 0) : (c > 0 ? c : 0);
    }
    int opp = t->white ? black : white;
    /* lowest: the opponent's lowest own point q holding its checker (0 if any is off);
     * the mover's point p is the opponent's q = p + 12 (p <= 12) or p - 12. */
    int lowest = 0;
    if (opp == CHECKERS) {
        for (int q = 1; q <= POINTS && !lowest; q++) {
            int p = q <= 12 ? q + 12 : q - 12;
            if (t->closed[p]) lowest = q;
        }
    }
    t->forbidden = lowest ? ((1u << lowest) - 1) : 0;
    int double_ = d1 == d2;
    t->head0 = m[HEAD];
    t->head_limit = (m[HEAD] == CHECKERS && double_ && (d1 == 3 || d1 == 4 || d1 == 6)) ? 2 : 1;

    memset(start, 0, sizeof(*start));
    for (int p = 0; p <= POINTS; p++) {
        if (p < 16) start->b.lo |= (uint64_t)m[p] << (4 * p);
        else start->b.hi |= (uint64_t)m[p] << (4 * (p - 16));
        if (p && m[p]) {
            start->occ |= 1u << p;
            start->mask |= BIT[p];
        }
    }
    if (double_) {
        start->nrem = 4;
        memset(start->rem, d1, 4);
    } else {
        start->nrem = 2;
        start->rem[0] = (uint8_t)(d1 > d2 ? d1 : d2);
        start->rem[1] = (uint8_t)(d1 > d2 ? d2 : d1);
    }
    return 0;
}

typedef struct {
    Level a, b;      /* the current level and the next */
    Level complete;  /* plays that use every die, by board */
    Node finished;   /* the first play that bears off the last checker */
    int has_finished;
    Node **out;      /* the plays, in order */
    int nout;
} Search;

static void search_free(Search *s) {
    level_free(&s->a);
    level_free(&s->b);
    level_free(&s->complete);
    free(s->out);
}

static inline Board untagged(Board b) {
    b.hi &= ((uint64_t)1 << 40) - 1;
    return b;
}

/* The search of nardy/long/movegen.py's _search; fills s->out. -1 when out of memory. */
static int search(const Turn *t, const Node *start, Search *s) {
    memset(s, 0, sizeof(*s));
    if (level_init(&s->a, 64) < 0 || level_init(&s->b, 64) < 0 || level_init(&s->complete, 64) < 0)
        return -1;
    Level *level = &s->a, *nxt = &s->b;
    level->nodes[0] = *start;
    level->n = 1;
    const Board off_all = {(uint64_t)CHECKERS, 0};
    int dice0 = start->rem[0], ndice = start->nrem;
    for (;;) {
        level_reset(nxt);
        for (int k = 0; k < level->n; k++) {
            const Node *node = &level->nodes[k];
            int home_only = !(node->occ >> 7);
            uint32_t srcs = home_only ? node->occ & HOME_BITS : node->occ;
            if (t->head0 - count_at(&node->b, HEAD) >= t->head_limit) srcs &= ~(1u << HEAD);
            int highest = highest_bit(node->occ);
            int sources[POINTS], nsrc = 0;
            while (srcs) {
                int src = highest_bit(srcs);
                srcs ^= 1u << src;
                sources[nsrc++] = src;
            }
            for (int i = 0; i < node->nrem; i++) {
                int die = node->rem[i];
                if (i && die == node->rem[i - 1]) continue;
                uint8_t rest[4];
                int nrest = 0;
                for (int j = 0; j < node->nrem; j++)
                    if (j != i) rest[nrest++] = node->rem[j];
                int last = nrest == 0;
                uint64_t tag = nrest == 1 ? (uint64_t)rest[0] << 40 : 0;
                for (int si = 0; si < nsrc; si++) {
                    int src = sources[si], dst = src - die;
                    int single = count_at(&node->b, src) == 1;
                    uint32_t nmask;
                    if (dst >= 1) {
                        if (t->closed[dst]) continue; /* §3.2 */
                        nmask = node->mask | BIT[dst];
                        if (single) nmask &= ~BIT[src];
                        if (t->forbidden && (runs(nmask) & t->forbidden)) continue; /* §3.5 */
                    } else {
                        /* bear off: all home, and an exact die or no checker higher (§4.2-4.4) */
                        if (!home_only || (dst < 0 && src != highest)) continue;
                        dst = 0;
                        nmask = single ? node->mask & ~BIT[src] : node->mask;
                    }
                    Board n = untagged(node->b);
                    move(&n, src, dst);
                    int fresh;
                    Node *child;
                    if (n.lo == off_all.lo && n.hi == off_all.hi) { /* the game ends (§4.6) */
                        if (s->has_finished) continue;
                        s->has_finished = 1;
                        child = &s->finished;
                        child->b = n;
                    } else if (last) { /* the last die: a complete play */
                        child = level_find_or_add(&s->complete, &n, &fresh);
                        if (!child) return -1;
                        if (!fresh) continue;
                    } else {
                        Board key = n;
                        key.hi |= tag;
                        child = level_find_or_add(nxt, &key, &fresh);
                        if (!child) return -1;
                        if (!fresh) continue;
                        uint32_t nocc = dst ? node->occ | (1u << dst) : node->occ;
                        if (single) nocc &= ~(1u << src);
                        child->occ = nocc;
                        child->mask = nmask;
                        child->nrem = (uint8_t)nrest;
                        memcpy(child->rem, rest, 4);
                    }
                    child->nsteps = node->nsteps + 1;
                    memcpy(child->steps, node->steps, sizeof(node->steps));
                    child->steps[node->nsteps][0] = (uint8_t)src;
                    child->steps[node->nsteps][1] = (uint8_t)die;
                }
            }
        }
        if (!nxt->n) break;
        Level *tmp = level;
        level = nxt;
        nxt = tmp;
    }
    int most = s->complete.n + s->has_finished;
    s->out = malloc(sizeof(Node *) * (size_t)(most + level->n + 1));
    if (!s->out) return -1;
    if (most) { /* every die played, or the game over (counts as all, §4.6) */
        if (s->has_finished) s->out[s->nout++] = &s->finished;
        for (int i = 0; i < s->complete.n; i++) s->out[s->nout++] = &s->complete.nodes[i];
        return 0;
    }
    /* Not every die can be played: the plays that use the most dice, by board (§3.6). */
    Level *seen = &s->complete; /* empty here: reused to drop repeated boards */
    for (int i = 0; i < level->n; i++) {
        Node *node = &level->nodes[i];
        if (!node->nsteps) continue;
        Board b = untagged(node->b);
        int fresh;
        Node *mark = level_find_or_add(seen, &b, &fresh);
        if (!mark) return -1;
        if (fresh) s->out[s->nout++] = node;
    }
    /* With two different dice of which only one can be played, the larger must be. */
    if (ndice == 2 && s->nout && s->out[0]->nsteps == 1) {
        int keep = 0;
        for (int i = 0; i < s->nout; i++)
            if (s->out[i]->steps[0][1] == dice0) s->out[keep++] = s->out[i];
        if (keep) s->nout = keep;
    }
    return 0;
}

/* -- Python objects ----------------------------------------------------------------------- */

static PyObject *new_tuple_of(PyObject *type, Py_ssize_t n) {
    return ((PyTypeObject *)type)->tp_alloc((PyTypeObject *)type, n);
}

/* The end board (absolute, signed) after the mover's board ``b``. */
static void end_board(const Turn *t, const Board *b, int out[POINTS]) {
    for (int a = 0; a < POINTS; a++) out[a] = t->others[a];
    for (int p = 1; p <= POINTS; p++) {
        int c = count_at(b, p);
        if (!c) continue;
        int a = t->white ? POINTS - p : (36 - p) % POINTS;
        out[a] += t->white ? c : -c;
    }
}

static PyObject *position_obj(int turn, const int board[POINTS]) {
    PyObject *tup = PyTuple_New(POINTS);
    if (!tup) return NULL;
    for (int a = 0; a < POINTS; a++) {
        PyObject *v = INTS[board[a] + CHECKERS];
        Py_INCREF(v);
        PyTuple_SET_ITEM(tup, a, v);
    }
    PyObject *pos = new_tuple_of(PositionType, 2);
    if (!pos) {
        Py_DECREF(tup);
        return NULL;
    }
    Py_INCREF(COLOR[turn]);
    PyTuple_SET_ITEM(pos, 0, COLOR[turn]);
    PyTuple_SET_ITEM(pos, 1, tup);
    return pos;
}

static PyObject *play_obj(const Turn *t, const Node *node) {
    PyObject *steps = PyTuple_New(node->nsteps);
    if (!steps) return NULL;
    for (int i = 0; i < node->nsteps; i++) {
        PyObject *step = STEP[node->steps[i][0]][node->steps[i][1]];
        Py_INCREF(step);
        PyTuple_SET_ITEM(steps, i, step);
    }
    int board[POINTS];
    end_board(t, &node->b, board);
    PyObject *end = position_obj(t->white ? 1 : 0, board);
    if (!end) {
        Py_DECREF(steps);
        return NULL;
    }
    PyObject *play = new_tuple_of(PlayType, 2);
    if (!play) {
        Py_DECREF(steps);
        Py_DECREF(end);
        return NULL;
    }
    PyTuple_SET_ITEM(play, 0, steps);
    PyTuple_SET_ITEM(play, 1, end);
    return play;
}

/* "w/15,0,...": at most 2 + 24 * 4 bytes; returns the length written. */
static int format_text(char *buf, int turn, const int board[POINTS]) {
    char *p = buf;
    *p++ = turn ? 'b' : 'w';
    *p++ = '/';
    for (int a = 0; a < POINTS; a++) {
        int c = board[a];
        if (a) *p++ = ',';
        if (c < 0) {
            *p++ = '-';
            c = -c;
        }
        if (c >= 10) *p++ = (char)('0' + c / 10);
        *p++ = (char)('0' + c % 10);
    }
    return (int)(p - buf);
}

static int ready(void) {
    if (!PlayType) {
        PyErr_SetString(PyExc_RuntimeError, "nardy.long._movegen.setup() was not called");
        return 0;
    }
    return 1;
}

typedef struct {
    Turn t;
    Search s;
} Run;

static int run_search(PyObject *const *args, Py_ssize_t nargs, Run *r) {
    if (!ready()) return -1;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "expected (turn, board, die1, die2)");
        return -1;
    }
    long d1 = PyLong_AsLong(args[2]), d2 = PyLong_AsLong(args[3]);
    if (PyErr_Occurred()) return -1;
    if (d1 < 1 || d1 > 6 || d2 < 1 || d2 > 6) {
        PyErr_SetString(PyExc_ValueError, "a die shows 1 to 6");
        return -1;
    }
    Node start;
    if (turn_setup(&r->t, &start, args[0], args[1], (int)d1, (int)d2) < 0) return -1;
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    rc = search(&r->t, &start, &r->s);
    Py_END_ALLOW_THREADS;
    if (rc < 0) {
        search_free(&r->s);
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static PyObject *py_legal_plays(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Run r;
    if (run_search(args, nargs, &r) < 0) return NULL;
    PyObject *list = PyList_New(r.s.nout);
    if (list) {
        for (int i = 0; i < r.s.nout; i++) {
            PyObject *play = play_obj(&r.t, r.s.out[i]);
            if (!play) {
                Py_CLEAR(list);
                break;
            }
            PyList_SET_ITEM(list, i, play);
        }
    }
    search_free(&r.s);
    return list;
}

typedef struct {
    char text[112];
    int len;
} Text;

static int text_cmp(const void *x, const void *y) {
    const Text *a = x, *b = y;
    int n = a->len < b->len ? a->len : b->len, c = memcmp(a->text, b->text, (size_t)n);
    return c ? c : a->len - b->len;
}

static PyObject *py_end_texts(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Run r;
    if (run_search(args, nargs, &r) < 0) return NULL;
    Text *texts = malloc(sizeof(Text) * (size_t)(r.s.nout + 1));
    PyObject *list = NULL;
    if (!texts) {
        PyErr_NoMemory();
        goto done;
    }
    for (int i = 0; i < r.s.nout; i++) {
        int board[POINTS];
        end_board(&r.t, &r.s.out[i]->b, board);
        texts[i].len = format_text(texts[i].text, r.t.white ? 1 : 0, board);
    }
    qsort(texts, (size_t)r.s.nout, sizeof(Text), text_cmp);
    list = PyList_New(r.s.nout);
    if (!list) goto done;
    for (int i = 0; i < r.s.nout; i++) {
        PyObject *s = PyUnicode_FromStringAndSize(texts[i].text, texts[i].len);
        if (!s) {
            Py_CLEAR(list);
            goto done;
        }
        PyList_SET_ITEM(list, i, s);
    }
done:
    free(texts);
    search_free(&r.s);
    return list;
}

static PyObject *py_end_boards(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Run r;
    if (run_search(args, nargs, &r) < 0) return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)r.s.nout * POINTS);
    if (out) {
        int8_t *buf = (int8_t *)PyBytes_AS_STRING(out);
        for (int i = 0; i < r.s.nout; i++) {
            int board[POINTS];
            end_board(&r.t, &r.s.out[i]->b, board);
            for (int a = 0; a < POINTS; a++) buf[i * POINTS + a] = (int8_t)board[a];
        }
    }
    search_free(&r.s);
    return out;
}

/* The 24 counts of a board sequence into ``board``; 0 with an exception set if it is not one. */
static int read_board(PyObject *counts, int board[POINTS]) {
    PyObject *seq = PySequence_Fast(counts, "board must be a sequence of 24 counts");
    if (!seq) return 0;
    if (PySequence_Fast_GET_SIZE(seq) != POINTS) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "expected 24 point counts");
        return 0;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (int a = 0; a < POINTS; a++) {
        long c = PyLong_AsLong(items[a]);
        if ((c == -1 && PyErr_Occurred()) || c > 99 || c < -99) {
            Py_DECREF(seq);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a count out of range");
            return 0;
        }
        board[a] = (int)c;
    }
    Py_DECREF(seq);
    return 1;
}

static PyObject *py_text(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "expected (turn, board)");
        return NULL;
    }
    long turn = PyLong_AsLong(args[0]);
    if (turn == -1 && PyErr_Occurred()) return NULL;
    int board[POINTS];
    if (!read_board(args[1], board)) return NULL;
    char buf[112];
    int len = format_text(buf, turn ? 1 : 0, board);
    return PyUnicode_FromStringAndSize(buf, len);
}

/* A step's (src, dst[, die]) into ``v`` (``die`` too when ``with_die``), checked; 0 with an
 * exception set if it is not a step of long nardy. */
static int read_step(PyObject *step, long v[3], int with_die) {
    v[0] = v[1] = v[2] = -1;
    if (PyTuple_Check(step) && PyTuple_GET_SIZE(step) >= 2 + with_die) {
        for (int i = 0; i < 2 + with_die; i++) v[i] = PyLong_AsLong(PyTuple_GET_ITEM(step, i));
    }
    if (PyErr_Occurred() || v[0] < 1 || v[0] > 25 || v[1] < 0 || v[1] > 24 ||
        (with_die && (v[2] < 1 || v[2] > 6))) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a step is (src, dst, die)");
        return 0;
    }
    return 1;
}

/* One step's notation, "src/dst" ("off" for dst 0), at ``p``; returns the end written. */
static char *format_step(char *p, long src, long dst) {
    if (src >= 10) *p++ = (char)('0' + src / 10);
    *p++ = (char)('0' + src % 10);
    *p++ = '/';
    if (dst == 0) {
        memcpy(p, "off", 3);
        return p + 3;
    }
    if (dst >= 10) *p++ = (char)('0' + dst / 10);
    *p++ = (char)('0' + dst % 10);
    return p;
}

static PyObject *py_notation(PyObject *self, PyObject *steps) {
    (void)self;
    PyObject *seq = PySequence_Fast(steps, "steps must be a sequence of (src, dst, die)");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n == 0) {
        Py_DECREF(seq);
        return PyUnicode_FromString("-");
    }
    char stack[64], *buf = n <= 8 ? stack : PyMem_Malloc((size_t)n * 8);
    if (!buf) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    char *p = buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        long v[3];
        if (!read_step(PySequence_Fast_GET_ITEM(seq, i), v, 0)) {
            if (buf != stack) PyMem_Free(buf);
            Py_DECREF(seq);
            return NULL;
        }
        if (i) *p++ = ' ';
        p = format_step(p, v[0], v[1]);
    }
    PyObject *out = PyUnicode_FromStringAndSize(buf, p - buf);
    if (buf != stack) PyMem_Free(buf);
    Py_DECREF(seq);
    return out;
}

/* -- legal plays as protobuf -------------------------------------------------------------
 * GameState field 17 (legal_plays), one LegalPlay per play: notation (field 1), end
 * position (2), steps (3: from, to, die; proto3 leaves out zero values). A play has at
 * most 4 steps, so an entry is at most PLAY_WIRE bytes. */
#define PLAY_STEPS 4
#define PLAY_WIRE 192

static char *put_varint(char *p, size_t n) {
    while (n >= 0x80) {
        *p++ = (char)((n & 0x7F) | 0x80);
        n >>= 7;
    }
    *p++ = (char)n;
    return p;
}

/* One play's LegalPlay entry at ``out``; returns the end written, NULL with an exception
 * set if ``play`` is not a (steps, end) of long nardy. */
static char *play_wire(char *out, PyObject *play) {
    if (!PyTuple_Check(play) || PyTuple_GET_SIZE(play) != 2) {
        PyErr_SetString(PyExc_TypeError, "a play is (steps, end)");
        return NULL;
    }
    PyObject *steps = PyTuple_GET_ITEM(play, 0), *end = PyTuple_GET_ITEM(play, 1);
    if (!PyTuple_Check(steps) || PyTuple_GET_SIZE(steps) > PLAY_STEPS || !PyTuple_Check(end) ||
        PyTuple_GET_SIZE(end) != 2) {
        PyErr_SetString(PyExc_ValueError, "a play is (at most 4 steps, (turn, board))");
        return NULL;
    }
    long turn = PyLong_AsLong(PyTuple_GET_ITEM(end, 0));
    int board[POINTS];
    if ((turn == -1 && PyErr_Occurred()) || !read_board(PyTuple_GET_ITEM(end, 1), board)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(steps);
    long v[PLAY_STEPS][3];
    char body[PLAY_WIRE], *b = body + 2, *note = b;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!read_step(PyTuple_GET_ITEM(steps, i), v[i], 1)) return NULL;
        if (i) *b++ = ' ';
        b = format_step(b, v[i][0], v[i][1]);
    }
    if (n == 0) *b++ = '-';
    body[0] = 0x0a; /* notation: under 0x80 bytes */
    body[1] = (char)(b - note);
    *b++ = 0x12; /* end position: under 0x80 bytes */
    int len = format_text(b + 1, turn ? 1 : 0, board);
    *b = (char)len;
    b += 1 + len;
    for (Py_ssize_t i = 0; i < n; i++) {
        char *field = b;
        b += 2;
        for (int k = 0; k < 3; k++) {
            if (v[i][k]) {
                *b++ = (char)(0x08 + 8 * k); /* fields 1..3, varints under 0x80 */
                *b++ = (char)v[i][k];
            }
        }
        field[0] = 0x1a;
        field[1] = (char)(b - field - 2);
    }
    *out++ = (char)0x8a; /* GameState field 17, length-delimited */
    *out++ = 0x01;
    out = put_varint(out, (size_t)(b - body));
    memcpy(out, body, (size_t)(b - body));
    return out + (b - body);
}

static PyObject *py_legal_plays_wire(PyObject *self, PyObject *plays) {
    (void)self;
    PyObject *seq = PySequence_Fast(plays, "plays must be a sequence of (steps, end)");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    char *buf = PyMem_Malloc((size_t)(n ? n : 1) * PLAY_WIRE);
    if (!buf) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    char *p = buf;
    for (Py_ssize_t i = 0; i < n && p; i++) p = play_wire(p, PySequence_Fast_GET_ITEM(seq, i));
    PyObject *out = p ? PyBytes_FromStringAndSize(buf, p - buf) : NULL;
    PyMem_Free(buf);
    Py_DECREF(seq);
    return out;
}

static PyObject *py_setup(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *step, *play, *position, *white, *black;
    if (!PyArg_ParseTuple(args, "O!O!O!OO", &PyType_Type, &step, &PyType_Type, &play, &PyType_Type,
                          &position, &white, &black))
        return NULL;
    PyTypeObject *types[3] = {(PyTypeObject *)step, (PyTypeObject *)play, (PyTypeObject *)position};
    for (int i = 0; i < 3; i++) {
        if (!PyType_IsSubtype(types[i], &PyTuple_Type) || types[i]->tp_basicsize != PyTuple_Type.tp_basicsize) {
            PyErr_SetString(PyExc_TypeError, "Step, Play and Position must be plain tuple types");
            return NULL;
        }
    }
    Py_XSETREF(StepType, Py_NewRef(step));
    Py_XSETREF(PlayType, Py_NewRef(play));
    Py_XSETREF(PositionType, Py_NewRef(position));
    Py_XSETREF(COLOR[0], Py_NewRef(white));
    Py_XSETREF(COLOR[1], Py_NewRef(black));
    for (int src = 1; src <= POINTS; src++) {
        for (int die = 1; die <= 6; die++) {
            int dst = src - die > 0 ? src - die : 0;
            PyObject *s = new_tuple_of(step, 3);
            if (!s) return NULL;
            PyTuple_SET_ITEM(s, 0, PyLong_FromLong(src));
            PyTuple_SET_ITEM(s, 1, PyLong_FromLong(dst));
            PyTuple_SET_ITEM(s, 2, PyLong_FromLong(die));
            Py_XSETREF(STEP[src][die], s);
        }
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", py_setup, METH_VARARGS, "setup(Step, Play, Position, white, black): the Python types."},
    {"legal_plays", (PyCFunction)(void (*)(void))py_legal_plays, METH_FASTCALL,
     "legal_plays(turn, board, d1, d2) -> list[Play], in the reference generator's order."},
    {"end_texts", (PyCFunction)(void (*)(void))py_end_texts, METH_FASTCALL,
     "end_texts(turn, board, d1, d2) -> sorted end-position texts of the legal plays."},
    {"end_boards", (PyCFunction)(void (*)(void))py_end_boards, METH_FASTCALL,
     "end_boards(turn, board, d1, d2) -> the end boards of the legal plays, 24 int8 each."},
    {"text", (PyCFunction)(void (*)(void))py_text, METH_FASTCALL,
     "text(turn, board) -> the position text."},
    {"notation", py_notation, METH_O, "notation(steps) -> the play's notation ('-' for none)."},
    {"legal_plays_wire", py_legal_plays_wire, METH_O,
     "legal_plays_wire(plays) -> the plays as protobuf GameState.legal_plays entries."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_movegen", "Compiled long-nardy legal-play generator.", -1, methods,
    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__movegen(void) {
    for (int p = 1; p <= POINTS; p++) BIT[p] = 1u << ((p <= 12 ? p + 12 : p - 12) - 1);
    for (int c = -CHECKERS; c <= CHECKERS; c++) {
        INTS[c + CHECKERS] = PyLong_FromLong(c);
        if (!INTS[c + CHECKERS]) return NULL;
    }
    return PyModule_Create(&module);
}
