/* Compiled long-nardy evaluation: the same arithmetic as the pure-Python reference in
 * engines/evaluate.py (estimates / evaluate), operation for operation and in the same
 * order, so that both give bit-identical equities and an engine makes the same choices
 * with either (tests/engines/test_evaluate_compiled.py compares them).
 *
 * Built by setuptools as engines._evaluate (optional, like nardy.long._movegen); the
 * weights are not compiled in: the Python module passes them (one tuple of doubles in
 * the order of FEATURES, then RACE epc, roll, MARS bias, lag, roll, EPC_STACK[1..3],
 * EPC_GAP, HEAD_CAP), so engines/evaluate.py stays the one place where it is tuned. Build with -ffp-contract=off: a fused multiply-add would round
 * differently from Python.
 *
 * Python API:
 *   FEATURES                                     the contact features, in weight order
 *   estimates(board, color, turn, weights) -> (p_win, p_mars_win, p_mars_loss)
 *   evaluate(board, color, turn, weights, values) -> equity for color
 *   evaluate_ends(plays, color, weights, values) -> [equity of each play's end position]
 *   worst_end(plays, color, weights, values) -> the lowest of those equities
 * board: 24 signed counts by absolute index (white positive); color, turn: 0 white,
 * 1 black; values: an object with float attributes win, win_mars, loss, loss_mars.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define POINTS 24
#define CHECKERS 15
#define NFEAT 19
#define NWEIGHTS (NFEAT + 2 + 3 + 5)

static const char *FEATURE_NAMES[NFEAT] = {
    "pips",   "head",   "head_late", "off",    "home",   "cross",  "points",
    "stack",  "key",    "block1",    "block2", "block3", "block4", "block5",
    "block6", "run3",   "run4",      "run5",   "roll"};

typedef struct {
    double contact[NFEAT];
    double race_epc, race_roll;
    double mars_bias, mars_lag, mars_roll;
    double stack1, stack2, stack3, gap; /* EPC_STACK[1..3], EPC_GAP */
    long head_cap;                      /* HEAD_CAP */
} Weights;

typedef struct {
    double win, win_mars, loss, loss_mars;
} Values;

typedef struct {
    long pips, on, home, cross, points, stack, key, head;
    long b[7];
    long r3, r4, r5;
} Side;

static PyObject *weights_seen; /* the last weights tuple parsed (a strong reference) */
static Weights weights_cache;
static PyObject *S_WIN, *S_WIN_MARS, *S_LOSS, *S_LOSS_MARS;

static int parse_weights(PyObject *obj, const Weights **out) {
    if (obj == weights_seen) {
        *out = &weights_cache;
        return 0;
    }
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != NWEIGHTS) {
        PyErr_Format(PyExc_TypeError, "weights must be a tuple of %d floats", NWEIGHTS);
        return -1;
    }
    double w[NWEIGHTS];
    for (int i = 0; i < NWEIGHTS; i++) {
        w[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(obj, i));
        if (w[i] == -1.0 && PyErr_Occurred()) return -1;
    }
    for (int i = 0; i < NFEAT; i++) weights_cache.contact[i] = w[i];
    weights_cache.race_epc = w[NFEAT];
    weights_cache.race_roll = w[NFEAT + 1];
    weights_cache.mars_bias = w[NFEAT + 2];
    weights_cache.mars_lag = w[NFEAT + 3];
    weights_cache.mars_roll = w[NFEAT + 4];
    weights_cache.stack1 = w[NFEAT + 5];
    weights_cache.stack2 = w[NFEAT + 6];
    weights_cache.stack3 = w[NFEAT + 7];
    weights_cache.gap = w[NFEAT + 8];
    weights_cache.head_cap = (long)w[NFEAT + 9];
    Py_INCREF(obj);
    Py_XSETREF(weights_seen, obj);
    *out = &weights_cache;
    return 0;
}

static int parse_values(PyObject *obj, Values *v) {
    PyObject *names[4] = {S_WIN, S_WIN_MARS, S_LOSS, S_LOSS_MARS};
    double *dst[4] = {&v->win, &v->win_mars, &v->loss, &v->loss_mars};
    for (int i = 0; i < 4; i++) {
        PyObject *x = PyObject_GetAttr(obj, names[i]);
        if (!x) return -1;
        *dst[i] = PyFloat_AsDouble(x);
        Py_DECREF(x);
        if (*dst[i] == -1.0 && PyErr_Occurred()) return -1;
    }
    return 0;
}

static int parse_color(PyObject *obj, int *out, const char *what) {
    long c = PyLong_AsLong(obj);
    if (c == -1 && PyErr_Occurred()) return -1;
    if (c != 0 && c != 1) {
        PyErr_Format(PyExc_ValueError, "%s must be 0 (white) or 1 (black)", what);
        return -1;
    }
    *out = (int)c;
    return 0;
}

/* The board's 24 counts, checked: each side at most 15 checkers on the board. */
static int parse_board(PyObject *obj, int board[POINTS]) {
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != POINTS) {
        PyErr_SetString(PyExc_TypeError, "board must be a tuple of 24 ints");
        return -1;
    }
    long white = 0, black = 0;
    for (int a = 0; a < POINTS; a++) {
        PyObject *x = PyTuple_GET_ITEM(obj, a);
        if (!PyLong_Check(x)) {
            PyErr_SetString(PyExc_TypeError, "board must be a tuple of 24 ints");
            return -1;
        }
        long c = PyLong_AsLong(x);
        if (c == -1 && PyErr_Occurred()) return -1;
        if (c > CHECKERS || c < -CHECKERS) {
            PyErr_Format(PyExc_ValueError, "point a=%d holds %ld checkers", a, c);
            return -1;
        }
        if (c > 0) white += c;
        else black -= c;
        board[a] = (int)c;
    }
    if (white > CHECKERS || black > CHECKERS) {
        PyErr_SetString(PyExc_ValueError, "a side has more than 15 checkers on the board");
        return -1;
    }
    return 0;
}

/* evaluate.sides: each side's counts by its own point, index p - 1. */
static void sides(const int board[POINTS], int color, int s[POINTS], int t[POINTS]) {
    int w[POINTS], b[POINTS];
    for (int i = 0; i < POINTS; i++) {
        int c = board[POINTS - 1 - i];
        w[i] = c > 0 ? c : 0;
        int d = i < 12 ? board[11 - i] : board[35 - i];
        b[i] = d < 0 ? -d : 0;
    }
    memcpy(s, color == 0 ? w : b, sizeof w);
    memcpy(t, color == 0 ? b : w, sizeof w);
}

static long pips_of(const int s[POINTS]) {
    long p = 0;
    for (int i = 0; i < POINTS; i++) p += (long)s[i] * (i + 1);
    return p;
}

/* evaluate._side */
static void side(const int s[POINTS], const int t[POINTS], long head_cap, Side *out) {
    out->pips = pips_of(s);
    long on = 0;
    for (int i = 0; i < POINTS; i++) on += s[i];
    out->on = on;
    out->home = s[0] + s[1] + s[2] + s[3] + s[4] + s[5];
    long cross = 0;
    for (int i = 6; i < POINTS; i++) cross += (long)s[i] * (i - 5);
    out->cross = cross;
    long zeros = 0, stack = 0;
    for (int i = 0; i < 23; i++) {
        if (!s[i]) zeros++;
        if (s[i] > 3) stack += s[i] - 3;
    }
    out->points = 23 - zeros;
    out->stack = stack;
    uint32_t hmask = 0;
    for (int k = 0; k < POINTS; k++)
        if (s[(k + 12) % POINTS]) hmask |= 1u << k;
    out->key = __builtin_popcount(hmask & (0x1Fu << 18));
    for (int i = 0; i < 7; i++) out->b[i] = 0;
    uint64_t wide = (uint64_t)hmask << 6;
    for (int j = 0; j < POINTS; j++) {
        int tj = t[j];
        if (tj) out->b[__builtin_popcountll((wide >> j) & 63)] +=
            (j < 23 || tj < head_cap) ? tj : head_cap;
    }
    out->r3 = out->r4 = out->r5 = 0;
    if (hmask & (hmask >> 1) & (hmask >> 2)) {
        uint32_t h = hmask;
        while (h) {
            int i = __builtin_ctz(h);
            uint32_t sh = h >> i;
            int n = __builtin_ctz(~sh); /* run length */
            if (n >= 3) {
                long behind = 0;
                for (int q = i + n; q < POINTS; q++) behind += t[q];
                if (n == 3) out->r3 += behind;
                else if (n == 4) out->r4 += behind;
                else out->r5 += behind;
            }
            h &= ~(((n >= 32) ? 0xFFFFFFFFu : ((1u << n) - 1)) << i);
        }
    }
    out->head = s[23];
}

/* evaluate._contact */
static int contact(const int s[POINTS], const int t[POINTS]) {
    int top = 23;
    while (top >= 0 && !s[top]) top--;
    for (int i = 0; i < top; i++)
        if (t[(i + 12) % POINTS]) return 1;
    top = 23;
    while (top >= 0 && !t[top]) top--;
    for (int i = 0; i < top; i++)
        if (s[(i + 12) % POINTS]) return 1;
    return 0;
}

/* evaluate._epc */
static double epc(const int s[POINTS], long pips, const Weights *w) {
    double e = (double)pips + w->stack1 * (double)(s[0] - 1 > 0 ? s[0] - 1 : 0) +
               w->stack2 * (double)(s[1] - 1 > 0 ? s[1] - 1 : 0);
    e += w->stack3 * (double)(s[2] - 2 > 0 ? s[2] - 2 : 0);
    int above = 0;
    for (int i = 6; i < POINTS; i++)
        if (s[i]) above = 1;
    for (int i = 5; i >= 3; i--) {
        if (s[i]) above = 1;
        else if (above) e += w->gap;
    }
    return e;
}

/* evaluate._mars_lag */
static double mars_lag(const int t[POINTS], double s_epc) {
    long need = 0;
    for (int i = 6; i < POINTS; i++) need += (long)t[i] * (i - 5);
    int i;
    for (i = 0; i < 6; i++)
        if (t[i]) break;
    need += i < 6 ? i + 1 : 1;
    return ((double)(need + 4) - s_epc) / sqrt(((double)need + s_epc) + 16.0);
}

static double sigmoid(double x) {
    if (x < -30) return 0.0;
    if (x > 30) return 1.0;
    return 1.0 / (1.0 + exp(-x));
}

/* evaluate.estimates */
static void estimates(const int board[POINTS], int color, int turn, const Weights *w,
                      double out[3]) {
    int s[POINTS], t[POINTS];
    sides(board, color, s, t);
    long on_s = 0, on_t = 0;
    for (int i = 0; i < POINTS; i++) {
        on_s += s[i];
        on_t += t[i];
    }
    if (on_s == 0 || on_t == 0) {
        if (on_s == 0) {
            out[0] = 1.0, out[1] = on_t == 15 ? 1.0 : 0.0, out[2] = 0.0;
        } else {
            out[0] = 0.0, out[1] = 0.0, out[2] = on_s == 15 ? 1.0 : 0.0;
        }
        return;
    }
    long roll = turn == color ? 1 : -1;
    long ps = pips_of(s), pt = pips_of(t);
    double es = epc(s, ps, w), et = epc(t, pt, w);
    double x;
    if (contact(s, t)) {
        Side a, z;
        side(s, t, w->head_cap, &a);
        side(t, s, w->head_cap, &z);
        double prog_t = (double)(360 - z.pips) / 360.0;
        double prog_s = (double)(360 - a.pips) / 360.0;
        double f[NFEAT] = {
            (double)(z.pips - a.pips) / 10.0,
            (double)(a.head - z.head),
            (double)a.head * prog_t - (double)z.head * prog_s,
            (double)((15 - a.on) - (15 - z.on)),
            (double)(a.home - z.home),
            (double)(a.cross - z.cross) / 10.0,
            (double)(a.points - z.points),
            (double)(a.stack - z.stack),
            (double)(a.key - z.key),
            (double)(a.b[1] - z.b[1]),
            (double)(a.b[2] - z.b[2]),
            (double)(a.b[3] - z.b[3]),
            (double)(a.b[4] - z.b[4]),
            (double)(a.b[5] - z.b[5]),
            (double)(a.b[6] - z.b[6]),
            (double)(a.r3 - z.r3),
            (double)(a.r4 - z.r4),
            (double)(a.r5 - z.r5),
            (double)roll,
        };
        x = 0.0;
        for (int i = 0; i < NFEAT; i++) x += w->contact[i] * f[i];
    } else {
        double scale = sqrt((double)(ps + pt + 20));
        x = w->race_epc * (et - es) / scale + w->race_roll * (double)roll * 10.0 / scale;
    }
    out[0] = sigmoid(x);
    out[1] = on_t == 15 ? sigmoid(w->mars_bias + w->mars_lag * mars_lag(t, es) +
                                  w->mars_roll * (double)roll)
                        : 0.0;
    out[2] = on_s == 15 ? sigmoid(w->mars_bias + w->mars_lag * mars_lag(s, et) -
                                  w->mars_roll * (double)roll)
                        : 0.0;
}

/* evaluate.evaluate */
static double equity(const int board[POINTS], int color, int turn, const Weights *w,
                     const Values *v) {
    double e[3];
    estimates(board, color, turn, w, e);
    double p = e[0], mw = e[1], ml = e[2];
    return p * (v->win + mw * (v->win_mars - v->win)) +
           (1 - p) * (v->loss + ml * (v->loss_mars - v->loss));
}

static PyObject *py_estimates(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    int board[POINTS], color, turn;
    const Weights *w;
    if (n != 4) {
        PyErr_SetString(PyExc_TypeError, "estimates(board, color, turn, weights)");
        return NULL;
    }
    if (parse_board(args[0], board) || parse_color(args[1], &color, "color") ||
        parse_color(args[2], &turn, "turn") || parse_weights(args[3], &w))
        return NULL;
    double e[3];
    estimates(board, color, turn, w, e);
    return Py_BuildValue("(ddd)", e[0], e[1], e[2]);
}

static PyObject *py_evaluate(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    int board[POINTS], color, turn;
    const Weights *w;
    Values v;
    if (n != 5) {
        PyErr_SetString(PyExc_TypeError, "evaluate(board, color, turn, weights, values)");
        return NULL;
    }
    if (parse_board(args[0], board) || parse_color(args[1], &color, "color") ||
        parse_color(args[2], &turn, "turn") || parse_weights(args[3], &w) ||
        parse_values(args[4], &v))
        return NULL;
    return PyFloat_FromDouble(equity(board, color, turn, w, &v));
}

/* The end position (turn, board) of a Play (a named tuple: steps, end), checked. */
static int play_end(PyObject *play, int board[POINTS], int *turn) {
    if (!PyTuple_Check(play) || PyTuple_GET_SIZE(play) != 2) {
        PyErr_SetString(PyExc_TypeError, "expected a Play (steps, end)");
        return -1;
    }
    PyObject *end = PyTuple_GET_ITEM(play, 1);
    if (!PyTuple_Check(end) || PyTuple_GET_SIZE(end) != 2) {
        PyErr_SetString(PyExc_TypeError, "expected a Play whose end is a Position (turn, board)");
        return -1;
    }
    return parse_color(PyTuple_GET_ITEM(end, 0), turn, "turn") ||
                   parse_board(PyTuple_GET_ITEM(end, 1), board)
               ? -1
               : 0;
}

static int parse_many(PyObject *const *args, Py_ssize_t n, const char *usage, PyObject **seq,
                      int *color, const Weights **w, Values *v) {
    if (n != 4) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    if (parse_color(args[1], color, "color") || parse_weights(args[2], w) ||
        parse_values(args[3], v))
        return -1;
    *seq = PySequence_Fast(args[0], "plays must be a sequence of Play");
    return *seq ? 0 : -1;
}

static PyObject *py_evaluate_ends(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    PyObject *seq;
    int color, turn, board[POINTS];
    const Weights *w;
    Values v;
    if (parse_many(args, n, "evaluate_ends(plays, color, weights, values)", &seq, &color, &w,
                   &v))
        return NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyList_New(m);
    if (!out) goto fail;
    for (Py_ssize_t i = 0; i < m; i++) {
        if (play_end(PySequence_Fast_GET_ITEM(seq, i), board, &turn)) goto fail;
        PyObject *x = PyFloat_FromDouble(equity(board, color, turn, w, &v));
        if (!x) goto fail;
        PyList_SET_ITEM(out, i, x);
    }
    Py_DECREF(seq);
    return out;
fail:
    Py_XDECREF(out);
    Py_DECREF(seq);
    return NULL;
}

static PyObject *py_worst_end(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    PyObject *seq;
    int color, turn, board[POINTS];
    const Weights *w;
    Values v;
    if (parse_many(args, n, "worst_end(plays, color, weights, values)", &seq, &color, &w, &v))
        return NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    if (m == 0) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "worst_end() of no plays");
        return NULL;
    }
    double worst = 0.0;
    for (Py_ssize_t i = 0; i < m; i++) {
        if (play_end(PySequence_Fast_GET_ITEM(seq, i), board, &turn)) {
            Py_DECREF(seq);
            return NULL;
        }
        double e = equity(board, color, turn, w, &v);
        if (i == 0 || e < worst) worst = e;
    }
    Py_DECREF(seq);
    return PyFloat_FromDouble(worst);
}

static PyMethodDef methods[] = {
    {"estimates", (PyCFunction)(void (*)(void))py_estimates, METH_FASTCALL,
     "estimates(board, color, turn, weights) -> (p_win, p_mars_win, p_mars_loss)."},
    {"evaluate", (PyCFunction)(void (*)(void))py_evaluate, METH_FASTCALL,
     "evaluate(board, color, turn, weights, values) -> the equity for color."},
    {"evaluate_ends", (PyCFunction)(void (*)(void))py_evaluate_ends, METH_FASTCALL,
     "evaluate_ends(plays, color, weights, values) -> the equity of each play's end."},
    {"worst_end", (PyCFunction)(void (*)(void))py_worst_end, METH_FASTCALL,
     "worst_end(plays, color, weights, values) -> the lowest equity of the plays' ends."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_evaluate", "Compiled long-nardy evaluation.", -1, methods,
    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__evaluate(void) {
    S_WIN = PyUnicode_InternFromString("win");
    S_WIN_MARS = PyUnicode_InternFromString("win_mars");
    S_LOSS = PyUnicode_InternFromString("loss");
    S_LOSS_MARS = PyUnicode_InternFromString("loss_mars");
    if (!S_WIN || !S_WIN_MARS || !S_LOSS || !S_LOSS_MARS) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    PyObject *names = PyTuple_New(NFEAT);
    if (!names) goto fail;
    for (int i = 0; i < NFEAT; i++) {
        PyObject *s = PyUnicode_FromString(FEATURE_NAMES[i]);
        if (!s) {
            Py_DECREF(names);
            goto fail;
        }
        PyTuple_SET_ITEM(names, i, s);
    }
    if (PyModule_AddObject(m, "FEATURES", names) < 0) {
        Py_DECREF(names);
        goto fail;
    }
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
