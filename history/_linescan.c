/* The lines of a block that are exactly what json.dumps writes for a stored layout, read into columns.
 *
 * The C twin of the regexes of ftharness.history.shapes: a Shape compiles to a
 * small program (literal bytes, and in each place a value of the layout's type),
 * and scan() runs every line of a block against the programs, keeping the values
 * of the lines that match in growable columns. It accepts exactly the lines the
 * Shape's regex accepts (tests/test_linescan.py runs both over the same lines):
 * ints of at most 18 digits, finite-looking floats as JSON writes them (parsed by
 * CPython's own PyOS_string_to_double, so the very doubles `float` gives), ASCII
 * strings without escapes, null/true/false, lists of ints. Every other line is
 * left to the reader, which decodes it as a dict. The greedy scan below is the
 * regex because a literal after a value never begins with a digit, a sign, a dot
 * or an exponent (shapes.py checks that when it compiles a program).
 *
 * Optional: without a C compiler the package installs without it, and the
 * reader uses the regexes (the same events, slower).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum {
    OP_LIT = 1,       /* u16 length, then the bytes                       */
    OP_INT = 2,       /* u8 column: an int of at most 18 digits            */
    OP_FLOAT = 3,     /* u8 column: a JSON float with a fraction or exponent */
    OP_STR = 4,       /* u8 column: a string, null, true or false (deduplicated) */
    OP_LIST = 5,      /* u8 column: [int, int, ...] (flat values and lengths) */
    OP_SPAN = 6,      /* u8 column: a run of context fields begins here    */
    OP_SPAN_END = 7,  /* u8 column: ... and ends here (the run's bytes, deduplicated) */
    OP_CTX_INT = 8,   /* an int or null, only checked (its span keeps it)  */
    OP_CTX_STR = 9,   /* a string or null, only checked                    */
};

typedef struct { char *data; Py_ssize_t len, cap; } Buf;

static int buf_add(Buf *b, const void *v, Py_ssize_t n)
{
    if (b->len + n > b->cap) {
        Py_ssize_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        char *d = PyMem_Realloc(b->data, cap);
        if (!d) { PyErr_NoMemory(); return -1; }
        b->data = d; b->cap = cap;
    }
    memcpy(b->data + b->len, v, n);
    b->len += n;
    return 0;
}

/* distinct byte strings of the block -> their numbers, in order of first appearance */
typedef struct {
    int32_t *slots;          /* cap entries: a number, or -1 */
    Py_ssize_t cap, n;
    Buf offs, lens;          /* per number: where its bytes are in the block */
} Table;

static uint64_t hash_bytes(const unsigned char *p, Py_ssize_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (Py_ssize_t i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ULL; }
    return h;
}

static int table_grow(Table *t, const unsigned char *base)
{
    Py_ssize_t cap = t->cap ? t->cap * 2 : 64;
    int32_t *slots = PyMem_Malloc(cap * sizeof(int32_t));
    if (!slots) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < cap; i++) slots[i] = -1;
    const Py_ssize_t *offs = (const Py_ssize_t *)t->offs.data, *lens = (const Py_ssize_t *)t->lens.data;
    for (Py_ssize_t k = 0; k < t->n; k++) {
        Py_ssize_t i = (Py_ssize_t)(hash_bytes(base + offs[k], lens[k]) & (uint64_t)(cap - 1));
        while (slots[i] >= 0) i = (i + 1) & (cap - 1);
        slots[i] = (int32_t)k;
    }
    PyMem_Free(t->slots);
    t->slots = slots; t->cap = cap;
    return 0;
}

static int32_t table_id(Table *t, const unsigned char *base, Py_ssize_t off, Py_ssize_t len)
{
    if (2 * (t->n + 1) > t->cap && table_grow(t, base) < 0) return -1;
    const Py_ssize_t *offs = (const Py_ssize_t *)t->offs.data, *lens = (const Py_ssize_t *)t->lens.data;
    Py_ssize_t i = (Py_ssize_t)(hash_bytes(base + off, len) & (uint64_t)(t->cap - 1));
    while (t->slots[i] >= 0) {
        int32_t k = t->slots[i];
        if (lens[k] == len && memcmp(base + offs[k], base + off, len) == 0) return k;
        i = (i + 1) & (t->cap - 1);
    }
    int32_t k = (int32_t)t->n;
    if (buf_add(&t->offs, &off, sizeof off) < 0 || buf_add(&t->lens, &len, sizeof len) < 0) return -1;
    t->slots[i] = k;
    t->n++;
    return k;
}

typedef struct {
    int op;                  /* the op that fills it */
    Buf vals;                /* int64 / double / int32 numbers */
    Buf lens;                /* OP_LIST: int64 lengths */
    Table table;             /* OP_STR, OP_SPAN */
    Py_ssize_t pend_off, pend_len;   /* OP_STR, OP_SPAN: the line's bytes, numbered once it matched */
    Py_ssize_t mark_vals, mark_lens; /* the lengths before this line (undone when it does not match) */
} Col;

typedef struct {
    const unsigned char *prog;
    Py_ssize_t plen;
    int ncols;
    Col *cols;
    Py_ssize_t n;            /* lines matched */
} Prog;

static inline int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* -?(?:0|[1-9][0-9]{0,17}) */
static int scan_int(const unsigned char **pp, const unsigned char *e, int64_t *out)
{
    const unsigned char *p = *pp;
    int neg = 0;
    if (p < e && *p == '-') { neg = 1; p++; }
    if (p >= e) return 0;
    if (*p == '0') { *out = 0; *pp = p + 1; return 1; }
    if (*p < '1' || *p > '9') return 0;
    int64_t v = 0;
    int digits = 0;
    while (p < e && digits < 18 && is_digit(*p)) { v = v * 10 + (*p - '0'); p++; digits++; }
    *out = neg ? -v : v;
    *pp = p;
    return 1;
}

/* -?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][-+]?[0-9]+)?|[eE][-+]?[0-9]+), as a double */
static int scan_float(const unsigned char **pp, const unsigned char *e, double *out)
{
    const unsigned char *start = *pp, *p = *pp;
    int frac = 0, ex = 0;
    if (p < e && *p == '-') p++;
    if (p >= e) return 0;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') { while (p < e && is_digit(*p)) p++; }
    else return 0;
    if (p < e && *p == '.') {
        if (p + 1 >= e || !is_digit(p[1])) return 0;
        p++;
        while (p < e && is_digit(*p)) p++;
        frac = 1;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        const unsigned char *q = p + 1;
        if (q < e && (*q == '+' || *q == '-')) q++;
        if (q < e && is_digit(*q)) {
            while (q < e && is_digit(*q)) q++;
            p = q;
            ex = 1;
        }   /* else the regex stops before the 'e' (with a fraction), and what follows must match it */
    }
    if (!frac && !ex) return 0;
    /* the token alone, NUL-terminated (the block is any buffer: nothing after it to stop a parse) */
    char small[64], *text = small, *end = NULL;
    Py_ssize_t n = p - start;
    if (n >= (Py_ssize_t)sizeof small && !(text = PyMem_Malloc(n + 1))) { PyErr_Clear(); return 0; }
    memcpy(text, start, n);
    text[n] = 0;
    double d = PyOS_string_to_double(text, &end, NULL);
    int ok = !(d == -1.0 && PyErr_Occurred()) && end == text + n;
    PyErr_Clear();
    if (text != small) PyMem_Free(text);
    if (!ok) return 0;
    *out = d;
    *pp = p;
    return 1;
}

/* "[\x20\x21\x23-\x5b\x5d-\x7e]*" */
static int scan_str(const unsigned char **pp, const unsigned char *e)
{
    const unsigned char *p = *pp;
    if (p >= e || *p != '"') return 0;
    for (p++; p < e; p++) {
        unsigned char c = *p;
        if (c == '"') { *pp = p + 1; return 1; }
        if (c < 0x20 || c > 0x7e || c == '\\') return 0;
    }
    return 0;
}

static int scan_word(const unsigned char **pp, const unsigned char *e, const char *w, Py_ssize_t n)
{
    if (e - *pp < n || memcmp(*pp, w, n) != 0) return 0;
    *pp += n;
    return 1;
}

#define NULL_WORD(pp, e) scan_word(pp, e, "null", 4)

/* 1: the line [off, end) matched (its values kept), 0: it did not (nothing kept), -1: an error */
static int match_line(Prog *s, const unsigned char *base, Py_ssize_t off, Py_ssize_t end)
{
    const unsigned char *p = base + off, *e = base + end;
    const unsigned char *pc = s->prog, *pe = s->prog + s->plen;
    for (int c = 0; c < s->ncols; c++) { s->cols[c].mark_vals = s->cols[c].vals.len; s->cols[c].mark_lens = s->cols[c].lens.len; }
    while (pc < pe) {
        int op = *pc++;
        if (op == OP_LIT) {
            Py_ssize_t n = pc[0] | (pc[1] << 8);
            pc += 2;
            if (e - p < n || memcmp(p, pc, n) != 0) goto fail;
            p += n; pc += n;
            continue;
        }
        if (op == OP_CTX_INT) { int64_t v; if (!scan_int(&p, e, &v) && !NULL_WORD(&p, e)) goto fail; continue; }
        if (op == OP_CTX_STR) { if (!scan_str(&p, e) && !NULL_WORD(&p, e)) goto fail; continue; }
        Col *col = &s->cols[*pc++];
        switch (op) {
        case OP_INT: {
            int64_t v;
            if (!scan_int(&p, e, &v)) goto fail;
            if (buf_add(&col->vals, &v, sizeof v) < 0) return -1;
            break;
        }
        case OP_FLOAT: {
            double d;
            if (!scan_float(&p, e, &d)) goto fail;
            if (buf_add(&col->vals, &d, sizeof d) < 0) return -1;
            break;
        }
        case OP_STR: {
            const unsigned char *q = p;
            if (!scan_str(&p, e) && !NULL_WORD(&p, e) && !scan_word(&p, e, "true", 4) && !scan_word(&p, e, "false", 5))
                goto fail;
            col->pend_off = q - base;
            col->pend_len = p - q;
            break;
        }
        case OP_LIST: {
            int64_t n = 0, v;
            if (p >= e || *p != '[') goto fail;
            p++;
            if (p < e && *p == ']') { p++; }
            else {
                for (;;) {
                    if (!scan_int(&p, e, &v)) goto fail;
                    if (buf_add(&col->vals, &v, sizeof v) < 0) return -1;
                    n++;
                    if (e - p >= 2 && p[0] == ',' && p[1] == ' ') { p += 2; continue; }
                    if (p < e && *p == ']') { p++; break; }
                    goto fail;
                }
            }
            if (buf_add(&col->lens, &n, sizeof n) < 0) return -1;
            break;
        }
        case OP_SPAN: col->pend_off = p - base; break;
        case OP_SPAN_END: col->pend_len = (p - base) - col->pend_off; break;
        default:
            PyErr_SetString(PyExc_ValueError, "linescan: a program with an unknown op");
            return -1;
        }
    }
    if (p != e) goto fail;
    for (int c = 0; c < s->ncols; c++) {   /* the line matched: number its strings and spans */
        Col *col = &s->cols[c];
        if (col->op != OP_STR && col->op != OP_SPAN) continue;
        int32_t id = table_id(&col->table, base, col->pend_off, col->pend_len);
        if (id < 0 || buf_add(&col->vals, &id, sizeof id) < 0) return -1;
    }
    s->n++;
    return 1;
fail:
    for (int c = 0; c < s->ncols; c++) { s->cols[c].vals.len = s->cols[c].mark_vals; s->cols[c].lens.len = s->cols[c].mark_lens; }
    return 0;
}

/* the columns of a program, from its ops (each column's op; a span's is OP_SPAN) */
static int prog_init(Prog *s, PyObject *bytes)
{
    s->prog = (const unsigned char *)PyBytes_AS_STRING(bytes);
    s->plen = PyBytes_GET_SIZE(bytes);
    s->ncols = 0;
    s->n = 0;
    s->cols = NULL;
    int ops[256];
    const unsigned char *pc = s->prog, *pe = s->prog + s->plen;
    while (pc < pe) {
        int op = *pc++;
        if (op == OP_LIT) {
            if (pe - pc < 2) goto bad;
            Py_ssize_t n = pc[0] | (pc[1] << 8);
            if (pe - pc - 2 < n) goto bad;
            pc += 2 + n;
        } else if (op == OP_CTX_INT || op == OP_CTX_STR) {
        } else if (op >= OP_INT && op <= OP_SPAN_END) {
            if (pc >= pe) goto bad;
            int c = *pc++;
            if (op != OP_SPAN_END) {
                if (c != s->ncols) goto bad;   /* columns numbered in order */
                ops[s->ncols++] = op;
            } else if (c >= s->ncols || ops[c] != OP_SPAN) goto bad;
        } else goto bad;
    }
    s->cols = PyMem_Calloc(s->ncols ? s->ncols : 1, sizeof(Col));
    if (!s->cols) { PyErr_NoMemory(); return -1; }
    for (int c = 0; c < s->ncols; c++) s->cols[c].op = ops[c];
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "linescan: a malformed program");
    return -1;
}

static void prog_free(Prog *s)
{
    if (!s->cols) return;
    for (int c = 0; c < s->ncols; c++) {
        Col *col = &s->cols[c];
        PyMem_Free(col->vals.data); PyMem_Free(col->lens.data);
        PyMem_Free(col->table.slots); PyMem_Free(col->table.offs.data); PyMem_Free(col->table.lens.data);
    }
    PyMem_Free(s->cols);
    s->cols = NULL;
}

static PyObject *bytearray_of(const Buf *b)
{
    return PyByteArray_FromStringAndSize(b->data ? b->data : "", b->len);
}

/* (number of lines matched, [per column: values | (numbers, [distinct bytes]) | (flat values, lengths)]) */
static PyObject *prog_result(Prog *s, const unsigned char *base)
{
    PyObject *cols = PyList_New(s->ncols);
    if (!cols) return NULL;
    for (int c = 0; c < s->ncols; c++) {
        Col *col = &s->cols[c];
        PyObject *item;
        if (col->op == OP_STR || col->op == OP_SPAN) {
            PyObject *distinct = PyList_New(col->table.n);
            if (!distinct) goto error;
            const Py_ssize_t *offs = (const Py_ssize_t *)col->table.offs.data, *lens = (const Py_ssize_t *)col->table.lens.data;
            for (Py_ssize_t k = 0; k < col->table.n; k++) {
                PyObject *b = PyBytes_FromStringAndSize((const char *)base + offs[k], lens[k]);
                if (!b) { Py_DECREF(distinct); goto error; }
                PyList_SET_ITEM(distinct, k, b);
            }
            item = Py_BuildValue("(NN)", bytearray_of(&col->vals), distinct);
        } else if (col->op == OP_LIST) {
            item = Py_BuildValue("(NN)", bytearray_of(&col->vals), bytearray_of(&col->lens));
        } else {
            item = bytearray_of(&col->vals);
        }
        if (!item) goto error;
        PyList_SET_ITEM(cols, c, item);
    }
    return Py_BuildValue("(nN)", s->n, cols);
error:
    Py_DECREF(cols);
    return NULL;
}

PyDoc_STRVAR(scan_doc,
"scan(body, programs) -> (which, starts, results)\n\n"
"body: whole lines (a bytes-like object), each ending with a newline. which: per line, the number of the\n"
"program it matched (int8), or -1. starts: int64 offsets of each line's start, and\n"
"len(body) last. results: per program, (lines matched, columns).");

static PyObject *scan(PyObject *self, PyObject *args)
{
    Py_buffer body;
    PyObject *programs;
    if (!PyArg_ParseTuple(args, "y*O!:scan", &body, &PyTuple_Type, &programs)) return NULL;
    Py_ssize_t np = PyTuple_GET_SIZE(programs);
    PyObject *result = NULL;
    Buf which = {0}, starts = {0};
    Prog *progs = NULL;
    const unsigned char *base = body.buf;
    Py_ssize_t len = body.len, at = 0;
    if (np > 127) { PyErr_SetString(PyExc_ValueError, "linescan: at most 127 programs"); goto done; }
    progs = PyMem_Calloc(np ? np : 1, sizeof(Prog));
    if (!progs) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t k = 0; k < np; k++) {
        PyObject *b = PyTuple_GET_ITEM(programs, k);
        if (!PyBytes_Check(b)) { PyErr_SetString(PyExc_TypeError, "linescan: programs are bytes"); goto done; }
        if (prog_init(&progs[k], b) < 0) goto done;
    }
    int last = 0;
    while (at < len) {
        const unsigned char *nl = memchr(base + at, '\n', len - at);
        Py_ssize_t end = nl ? nl - base : len;
        int8_t got = -1;
        if (buf_add(&starts, &at, sizeof at) < 0) goto done;
        for (Py_ssize_t t = 0; t < np; t++) {
            int k = t == 0 ? last : (t <= last ? (int)t - 1 : (int)t);   /* the last one matched first */
            int r = match_line(&progs[k], base, at, end);
            if (r < 0) goto done;
            if (r) { got = (int8_t)k; last = k; break; }
        }
        if (buf_add(&which, &got, 1) < 0) goto done;
        at = nl ? end + 1 : len;
    }
    if (buf_add(&starts, &len, sizeof len) < 0) goto done;
    PyObject *results = PyList_New(np);
    if (!results) goto done;
    for (Py_ssize_t k = 0; k < np; k++) {
        PyObject *r = prog_result(&progs[k], base);
        if (!r) { Py_DECREF(results); goto done; }
        PyList_SET_ITEM(results, k, r);
    }
    result = Py_BuildValue("(NNN)", bytearray_of(&which), bytearray_of(&starts), results);
done:
    if (progs) for (Py_ssize_t k = 0; k < np; k++) prog_free(&progs[k]);
    PyMem_Free(progs);
    PyMem_Free(which.data);
    PyMem_Free(starts.data);
    PyBuffer_Release(&body);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, scan_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_linescan",
    "The lines of a block that match a stored layout's shape, read into columns (see ftharness.history.shapes).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__linescan(void) { return PyModule_Create(&module); }
