/* Compiled short-nardy network inputs: the same encoding as the numpy reference in
 * engines/features_short.py, position by position in C (self-play and the lookahead call
 * it for a few to a few hundred positions at a time, where numpy's per-call overhead
 * dominated). Bit-identical to the reference (every input is one correctly rounded
 * division of integers); tests/engines/test_short_network.py compares.
 *
 * Built by setuptools as engines._network_short (optional, like engines._network).
 *
 * Python API:
 *   encode(rows, turns, x, c, bar) -> None
 *     rows: n packed boards, 26 signed bytes each (24 counts by absolute index, white
 *     positive, then the bars of white and black); turns: n bytes, 0 white / 1 black to
 *     move; x: writable C-contiguous float64 n * 205 (the inputs); c: writable int64
 *     n * 48 (the side to move's checkers on its points 1..24, then its opponent's);
 *     bar: writable int64 n * 2 (the bars of the side to move and of its opponent).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define POINTS 24
#define WIDTH 26
#define UNITS 4
#define EXTRA 4
#define SIDE (POINTS * UNITS + 2 + EXTRA)
#define FEATURES (2 * SIDE + 1)
#define CHECKERS 15
#define PIPS 167
#define HOME 6

/* REACH[d]: the rolls (bit i = 6 (a-1) + (b-1) of the 36) that move one checker exactly
 * d pips: one die, both dice, or two to four steps of a double */
static uint64_t REACH[POINTS + 1];

static void init_reach(void) {
    for (int i = 0; i < 36; i++) {
        int a = i / 6 + 1, b = i % 6 + 1;
        int steps[4], k = 0;
        if (a == b) {
            steps[k++] = a;
            steps[k++] = 2 * a;
            steps[k++] = 3 * a;
            steps[k++] = 4 * a;
        } else {
            steps[k++] = a;
            steps[k++] = b;
            steps[k++] = a + b;
        }
        for (int j = 0; j < k; j++)
            if (steps[j] <= POINTS) REACH[steps[j]] |= (uint64_t)1 << i;
    }
}

static int bits(uint64_t m) {
    int n = 0;
    for (; m; m &= m - 1) n++;
    return n;
}

/* absolute index of color's own point p (1..24), RULES.md section 9 */
static int idx_of(int color, int p) { return color == 0 ? POINTS - p : p - 1; }

static void encode_one(const int8_t *row, int turn, double *x, int64_t *c, int64_t *bar) {
    int color[2] = {turn, 1 - turn};
    for (int s = 0; s < 2; s++) {
        int sign = color[s] == 0 ? 1 : -1;
        for (int p = 1; p <= POINTS; p++) {
            long n = sign * (long)row[idx_of(color[s], p)];
            c[s * POINTS + p - 1] = n > 0 ? n : 0;
        }
        bar[s] = row[POINTS + color[s]];
    }
    int rear[2];
    uint32_t blots[2] = {0, 0}, occupied[2] = {0, 0};
    for (int s = 0; s < 2; s++) {
        const int64_t *cs = c + s * POINTS;
        double *xs = x + s * SIDE;
        int64_t on = 0, pips = 0, home = 0;
        uint32_t made = 0;
        rear[s] = 0;
        for (int p = 1; p <= POINTS; p++) {
            int64_t n = cs[p - 1];
            double *u = xs + (p - 1) * UNITS;
            u[0] = n >= 1;
            u[1] = n >= 2;
            u[2] = n >= 3;
            u[3] = n > 3 ? (double)(n - 3) / 2 : 0.0;
            on += n;
            pips += n * p;
            if (n >= 2) {
                made |= 1u << (p - 1);
                if (p <= HOME) home++;
            }
            if (n == 1) blots[s] |= 1u << p;
            if (n > 0) {
                occupied[s] |= 1u << p;
                rear[s] = p;
            }
        }
        if (bar[s] > 0) rear[s] = 25;
        double *r = xs + POINTS * UNITS;
        r[0] = (double)bar[s] / 2;
        r[1] = (double)(CHECKERS - on - bar[s]) / CHECKERS;
        r[2] = (double)(pips + 25 * bar[s]) / PIPS;
        int longest = 0;
        for (int k = 0; k < 6; k++) {
            longest += made != 0;
            made &= made >> 1;
        }
        r[4] = (double)longest / 6;
        r[5] = (double)home / 6;
    }
    for (int s = 0; s < 2; s++) {
        /* the other's shooters in this side's points: its point q is our 25 - q, its bar 0 */
        int o = 1 - s;
        uint32_t shooters = bar[o] > 0 ? 1u : 0u;
        for (int q = 1; q <= POINTS; q++)
            if (occupied[o] >> q & 1u) shooters |= 1u << (25 - q);
        uint64_t rolls = 0;
        for (int d = 1; d <= POINTS; d++)
            if (blots[s] & (shooters << d)) rolls |= REACH[d];
        x[s * SIDE + POINTS * UNITS + 3] = (double)bits(rolls) / 36;
    }
    x[FEATURES - 1] = rear[0] + rear[1] <= 25;
}

static PyObject *encode(PyObject *self, PyObject *args) {
    Py_buffer rows, turns, xb, cb, bb;
    if (!PyArg_ParseTuple(args, "y*y*w*w*w*", &rows, &turns, &xb, &cb, &bb)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = turns.len;
    if (rows.len != n * WIDTH || xb.len != (Py_ssize_t)(n * FEATURES * sizeof(double)) ||
        cb.len != (Py_ssize_t)(n * 2 * POINTS * sizeof(int64_t)) ||
        bb.len != (Py_ssize_t)(n * 2 * sizeof(int64_t))) {
        PyErr_SetString(PyExc_ValueError, "buffers of the wrong size");
        goto done;
    }
    const int8_t *r = rows.buf;
    const int8_t *t = turns.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (t[i] != 0 && t[i] != 1) {
            PyErr_SetString(PyExc_ValueError, "turns are 0 (white) or 1 (black)");
            goto done;
        }
        encode_one(r + i * WIDTH, t[i], (double *)xb.buf + i * FEATURES,
                   (int64_t *)cb.buf + i * 2 * POINTS, (int64_t *)bb.buf + i * 2);
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&rows);
    PyBuffer_Release(&turns);
    PyBuffer_Release(&xb);
    PyBuffer_Release(&cb);
    PyBuffer_Release(&bb);
    return result;
}

static PyMethodDef methods[] = {
    {"encode", encode, METH_VARARGS, "encode(rows, turns, x, c, bar): inputs, counts, bars"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_network_short",
                                    "Compiled short-nardy network inputs "
                                    "(see engines/features_short.py).",
                                    -1, methods};

PyMODINIT_FUNC PyInit__network_short(void) {
    init_reach();
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddIntConstant(m, "FEATURES", FEATURES) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
