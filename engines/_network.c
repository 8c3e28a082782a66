/* Compiled network inputs: the same encoding as the numpy reference in engines/network.py
 * (counts, features, blocks, race), position by position in C, for the lookahead's
 * hundreds to thousands of positions per call, where numpy's per-call overhead and the
 * Position -> array conversion dominated. Bit-identical to the reference (every input is
 * one correctly rounded operation on integers); tests/engines/test_network.py compares.
 *
 * Built by setuptools as engines._network (optional, like engines._evaluate).
 *
 * Python API:
 *   hidden(positions, w1, b1, h, c) -> None: see the function
 *   hidden_boards(boards, turn, w1, b1, h, c) -> None: the same of packed boards
 *   encode(positions, x, c) -> None
 *     positions: a list of nardy.Position (turn, board), board 24 signed counts by
 *     absolute index (white positive), turn 0 white / 1 black;
 *     x: a writable C-contiguous float64 buffer of len(positions) * 215 (the inputs);
 *     c: a writable C-contiguous int64 buffer of len(positions) * 48 (the counts of the
 *     side to move on its points 1..24, then of its opponent on its own points 1..24).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define POINTS 24
#define UNITS 4
#define BLOCK 7
#define SIDE (POINTS * UNITS + 4 + BLOCK)
#define FEATURES (2 * SIDE + 1)
#define CHECKERS 15

/* absolute index of color's own point p (1..24), RULES.md section 1 */
static int idx_of(int color, int p) { return color == 0 ? POINTS - p : (36 - p) % POINTS; }

/* progress of a side's point p along the other side's path */
static int prog_other(int p) { return p <= 12 ? 12 - p : 36 - p; }

/* held points in a six-bit window (a table: __builtin_popcount is a libgcc call unless
 * the build targets a CPU with popcnt) */
static const uint8_t HELD[64] = {
#define B2(n) n, n + 1, n + 1, n + 2
#define B4(n) B2(n), B2(n + 1), B2(n + 1), B2(n + 2)
    B4(0), B4(1), B4(1), B4(2)};
#undef B2
#undef B4
static int popcount6(unsigned w) { return HELD[w & 63u]; }

static void encode_one(const long board[POINTS], int turn, double *x, int64_t *c) {
    int color[2] = {turn, 1 - turn};
    for (int s = 0; s < 2; s++) {
        int sign = color[s] == 0 ? 1 : -1;
        for (int p = 1; p <= POINTS; p++) {
            long n = sign * board[idx_of(color[s], p)];
            c[s * POINTS + p - 1] = n > 0 ? n : 0;
        }
    }
    memset(x, 0, sizeof(double) * FEATURES);
    uint32_t mask[2] = {0, 0};
    int rear[2] = {99, 99}, front[2] = {-1, -1};
    for (int s = 0; s < 2; s++) {
        const int64_t *cs = c + s * POINTS;
        double *xs = x + s * SIDE;
        int64_t on = 0, pips = 0, home = 0;
        for (int p = 1; p <= POINTS; p++) {
            int64_t n = cs[p - 1];
            double *u = xs + (p - 1) * UNITS;
            u[0] = n >= 1;
            u[1] = n >= 2;
            u[2] = n >= 3;
            u[3] = n > 3 ? (double)(n - 3) / 4 : 0.0;
            on += n;
            pips += n * p;
            if (p <= 6) home += n;
            if (n > 0) {
                mask[s] |= 1u << prog_other(p);
                if (POINTS - p < rear[s]) rear[s] = POINTS - p;
                if (prog_other(p) > front[s]) front[s] = prog_other(p);
            }
        }
        xs[POINTS * UNITS + 0] = (double)(CHECKERS - on) / CHECKERS;
        xs[POINTS * UNITS + 1] = (double)pips / 150;
        xs[POINTS * UNITS + 2] = (double)cs[POINTS - 1] / CHECKERS;
        xs[POINTS * UNITS + 3] = (double)home / CHECKERS;
    }
    for (int s = 0; s < 2; s++) {
        /* side s's blocks against the other side o: the other's checkers by their
         * progress j along their own path, and the held points in the six in front */
        const int64_t *co = c + (1 - s) * POINTS;
        double *b = x + s * SIDE + POINTS * UNITS + 4;
        double hist[7] = {0};
        for (int j = 0; j < POINTS; j++) {
            int64_t n = co[POINTS - 1 - j];
            if (n) hist[popcount6(mask[s] >> (j + 1))] += (double)n;
        }
        for (int h = 1; h <= 6; h++) b[h - 1] = hist[h] / CHECKERS;
        uint32_t m = mask[s];
        int longest = 0;
        for (int k = 0; k < 6; k++) {
            longest += m != 0;
            m &= m >> 1;
        }
        b[6] = longest / 6.0;
    }
    x[FEATURES - 1] = (rear[0] > front[1]) && (rear[1] > front[0]);
}

/* a Position (turn, board) -> 24 counts and the side to move; -1 with an exception */
static int read_position(PyObject *pos, long board[POINTS], int *turn) {
    if (!PyTuple_Check(pos) || PyTuple_GET_SIZE(pos) != 2) {
        PyErr_SetString(PyExc_TypeError, "a position is a (turn, board) tuple");
        return -1;
    }
    long t = PyLong_AsLong(PyTuple_GET_ITEM(pos, 0));
    PyObject *bt = PyTuple_GET_ITEM(pos, 1);
    if ((t != 0 && t != 1) || !PyTuple_Check(bt) || PyTuple_GET_SIZE(bt) != POINTS) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "bad position");
        return -1;
    }
    for (int a = 0; a < POINTS; a++) {
        board[a] = PyLong_AsLong(PyTuple_GET_ITEM(bt, a));
        if (board[a] == -1 && PyErr_Occurred()) return -1;
    }
    *turn = (int)t;
    return 0;
}

static PyObject *encode(PyObject *self, PyObject *args) {
    PyObject *positions, *xobj, *cobj;
    if (!PyArg_ParseTuple(args, "OOO", &positions, &xobj, &cobj)) return NULL;
    PyObject *seq = PySequence_Fast(positions, "positions must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    Py_buffer xb, cb;
    if (PyObject_GetBuffer(xobj, &xb, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        Py_DECREF(seq);
        return NULL;
    }
    if (PyObject_GetBuffer(cobj, &cb, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&xb);
        Py_DECREF(seq);
        return NULL;
    }
    PyObject *result = NULL;
    if (xb.len != (Py_ssize_t)(n * FEATURES * sizeof(double)) ||
        cb.len != (Py_ssize_t)(n * 2 * POINTS * sizeof(int64_t))) {
        PyErr_SetString(PyExc_ValueError, "buffers of the wrong size");
        goto done;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        long board[POINTS];
        int turn;
        if (read_position(items[i], board, &turn) < 0) goto done;
        encode_one(board, turn, (double *)xb.buf + i * FEATURES,
                   (int64_t *)cb.buf + i * 2 * POINTS);
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&xb);
    PyBuffer_Release(&cb);
    Py_DECREF(seq);
    return result;
}

/* h = b1 + the rows of w1 weighted by the nonzero inputs x (compiled for AVX2 too where
 * the machine has it: the same additions in the same order, so the same floats) */
#if defined(__GNUC__) && defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
static void add_rows(float *restrict h, const float *restrict b1, const float *restrict w1,
                     const double *x, Py_ssize_t nh) {
    memcpy(h, b1, nh * sizeof(float));
    for (int f = 0; f < FEATURES; f++) {
        if (x[f] == 0.0) continue;
        const float xf = (float)x[f];
        const float *restrict w = w1 + f * nh;
        for (Py_ssize_t j = 0; j < nh; j++) h[j] += xf * w[j];
    }
}

/* where hidden() reads its positions: a list of Positions, or packed boards of one side */
typedef struct {
    PyObject **items;      /* Positions, or NULL */
    const int8_t *boards;  /* else n * 24 signed counts, ``turn`` to move in each */
    int turn;
} Source;

static int source_read(const Source *src, Py_ssize_t i, long board[POINTS], int *turn) {
    if (src->items) return read_position(src->items[i], board, turn);
    for (int a = 0; a < POINTS; a++) board[a] = src->boards[i * POINTS + a];
    *turn = src->turn;
    return 0;
}

/* x @ w1 + b1 of n positions into h (n * hidden float32), their counts into c */
static PyObject *hidden_of(const Source *src, Py_ssize_t n, PyObject *wobj, PyObject *bobj,
                           PyObject *hobj, PyObject *cobj) {
    Py_buffer wb = {0}, bb = {0}, hb = {0}, cb = {0};
    PyObject *result = NULL;
    if (PyObject_GetBuffer(wobj, &wb, PyBUF_C_CONTIGUOUS) < 0) goto done;
    if (PyObject_GetBuffer(bobj, &bb, PyBUF_C_CONTIGUOUS) < 0) goto done;
    if (PyObject_GetBuffer(hobj, &hb, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) goto done;
    if (PyObject_GetBuffer(cobj, &cb, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) goto done;
    Py_ssize_t nh = bb.len / (Py_ssize_t)sizeof(float);
    if (wb.len != (Py_ssize_t)(FEATURES * nh * sizeof(float)) ||
        hb.len != (Py_ssize_t)(n * nh * sizeof(float)) ||
        cb.len != (Py_ssize_t)(n * 2 * POINTS * sizeof(int64_t))) {
        PyErr_SetString(PyExc_ValueError, "buffers of the wrong size");
        goto done;
    }
    const float *w1 = wb.buf, *b1 = bb.buf;
    double x[FEATURES];
    for (Py_ssize_t i = 0; i < n; i++) {
        long board[POINTS];
        int turn;
        if (source_read(src, i, board, &turn) < 0) goto done;
        encode_one(board, turn, x, (int64_t *)cb.buf + i * 2 * POINTS);
        add_rows((float *)hb.buf + i * nh, b1, w1, x, nh);
    }
    result = Py_None;
    Py_INCREF(result);
done:
    if (wb.obj) PyBuffer_Release(&wb);
    if (bb.obj) PyBuffer_Release(&bb);
    if (hb.obj) PyBuffer_Release(&hb);
    if (cb.obj) PyBuffer_Release(&cb);
    return result;
}

/* hidden(positions, w1, b1, h, c): the hidden layer's inputs x @ w1 + b1 (float32, the
 * sum over the nonzero inputs only: most of the 215 are zero) into h (n * hidden
 * float32), and the counts into c as in encode(); w1: float32 FEATURES * hidden. */
static PyObject *hidden(PyObject *self, PyObject *args) {
    PyObject *positions, *wobj, *bobj, *hobj, *cobj;
    if (!PyArg_ParseTuple(args, "OOOOO", &positions, &wobj, &bobj, &hobj, &cobj)) return NULL;
    PyObject *seq = PySequence_Fast(positions, "positions must be a sequence");
    if (!seq) return NULL;
    Source src = {PySequence_Fast_ITEMS(seq), NULL, 0};
    PyObject *result = hidden_of(&src, PySequence_Fast_GET_SIZE(seq), wobj, bobj, hobj, cobj);
    Py_DECREF(seq);
    return result;
}

/* hidden_boards(boards, turn, w1, b1, h, c): hidden() of boards packed as by
 * nardy.end_boards (24 signed bytes each), with side ``turn`` to move in every one. */
static PyObject *hidden_boards(PyObject *self, PyObject *args) {
    Py_buffer boards;
    int turn;
    PyObject *wobj, *bobj, *hobj, *cobj;
    if (!PyArg_ParseTuple(args, "y*iOOOO", &boards, &turn, &wobj, &bobj, &hobj, &cobj))
        return NULL;
    PyObject *result = NULL;
    if (boards.len % POINTS || (turn != 0 && turn != 1)) {
        PyErr_SetString(PyExc_ValueError, "boards of 24 bytes each, turn 0 or 1");
    } else {
        Source src = {NULL, boards.buf, turn};
        result = hidden_of(&src, boards.len / POINTS, wobj, bobj, hobj, cobj);
    }
    PyBuffer_Release(&boards);
    return result;
}

static PyMethodDef methods[] = {
    {"hidden", hidden, METH_VARARGS, "hidden(positions, w1, b1, h, c): x @ w1 + b1 and counts"},
    {"hidden_boards", hidden_boards, METH_VARARGS,
     "hidden_boards(boards, turn, w1, b1, h, c): hidden() of packed boards"},
    {"encode", encode, METH_VARARGS, "encode(positions, x, c): the network inputs and counts"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_network",
                                    "Compiled network inputs (see engines/network.py).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__network(void) {
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddIntConstant(m, "FEATURES", FEATURES) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
