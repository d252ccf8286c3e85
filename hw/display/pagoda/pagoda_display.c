/*
 * Pagoda GPU: the display controller.
 *
 * Models one scanout that reads a surface physically (VRAM, hidden VRAM or
 * the aperture segment) through the same paths as the engines
 * (pagoda_mem_map()). The surface registers are staged: a FLIP write asks
 * for them to be latched at the next vertical blank. Vertical blanks come
 * from a timer on the virtual clock at DISP_REFRESH, armed only while the
 * latched state is enabled or a flip is pending, so an idle display does
 * not tick. Each vblank advances FRAME and raises PAGODA_INT_VBLANK.
 *
 * A latched state that cannot be shown (bad geometry or format, surface
 * outside its segment) is kept but shows black; it sets STATUS.FAULT and
 * queues one fault record (engine PAGODA_FAULT_SOURCE_DISPLAY).
 *
 * The latched surface is shown on a QEMU graphic console, converted to a
 * host-owned 32-bit surface at each console update, with the cursor drawn
 * over it; only the lines that changed since the last update are reported
 * to the UI. SINCE_VBLANK gives the time of the last vblank on the virtual
 * clock, so that the driver can time-stamp vblanks exactly however late it
 * handles their interrupts.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bswap.h"
#include "qapi/error.h"
#include "migration/vmstate.h"
#include "ui/console.h"
#include "pagoda_int.h"
#include "trace.h"

#define DISP_CONTROL_BITS       (PAGODA_DISP_CONTROL_ENABLE | \
                                 PAGODA_DISP_CONTROL_CURSOR)
#define DISP_MIN_SIZE           64
#define DISP_MAX_SIZE           8192

/* Vertical blank period: 10^12 / DISP_REFRESH ns (16666666 ns at 60 Hz). */
#define VBLANK_PERIOD_NS        (NANOSECONDS_PER_SECOND * 1000 / PAGODA_DISP_REFRESH)

/* Standard sizes offered in the mode list, after the preferred one. */
static const struct {
    uint16_t width, height;
} standard_modes[] = {
    { 640, 480 }, { 800, 600 }, { 1024, 768 }, { 1280, 720 },
    { 1280, 800 }, { 1280, 1024 }, { 1366, 768 }, { 1600, 900 },
    { 1920, 1080 }, { 1920, 1200 }, { 2560, 1440 }, { 2560, 1600 },
};

static uint32_t format_bpp(uint32_t format)
{
    switch (format) {
    case PAGODA_DISP_FORMAT_XRGB8888:
    case PAGODA_DISP_FORMAT_ARGB8888:
        return 4;
    case PAGODA_DISP_FORMAT_RGB565:
        return 2;
    }
    return 0;
}

static bool scanout_enabled(const PagodaScanout *so)
{
    return so->control & PAGODA_DISP_CONTROL_ENABLE;
}

static bool cursor_enabled(const PagodaScanout *so)
{
    return scanout_enabled(so) && (so->control & PAGODA_DISP_CONTROL_CURSOR);
}

static uint32_t cursor_width(const PagodaDispCursor *c)
{
    return PAGODA_DISP_MODE_WIDTH(c->size);
}

static uint32_t cursor_height(const PagodaDispCursor *c)
{
    return PAGODA_DISP_MODE_HEIGHT(c->size);
}

/* The latched state scans out: enabled and accepted. */
static bool scanning_out(PagodaDisplay *d)
{
    return scanout_enabled(&d->latched) && !d->fault;
}

/*
 * Check that @bytes from @paddr lie in VRAM, hidden VRAM or the aperture
 * segment: 0, or the fault code with what is wrong in @why.
 */
static uint32_t check_in_segment(PagodaState *s, uint64_t paddr,
                                 uint64_t bytes, const char **why)
{
    unsigned seg = PAGODA_PADDR_SEG(paddr);
    uint64_t off = PAGODA_PADDR_OFFSET(paddr);
    uint64_t size;

    if (paddr & PAGODA_PADDR_RESERVED) {
        *why = "address has reserved bits set";
        return PAGODA_FAULT_OUT_OF_SEGMENT;
    }
    if (seg != PAGODA_SEG_VRAM && seg != PAGODA_SEG_VRAM_HIDDEN &&
        seg != PAGODA_SEG_APERTURE) {
        *why = "not in VRAM, hidden VRAM or the aperture segment";
        return PAGODA_FAULT_OUT_OF_SEGMENT;
    }
    size = pagoda_segment_size(s, seg);
    if (off > size || bytes > size - off) {
        *why = "runs past the end of its segment";
        return PAGODA_FAULT_OUT_OF_SEGMENT;
    }
    return 0;
}

/* Check the cursor of a state: as scanout_check(). */
static uint32_t cursor_check(PagodaState *s, const PagodaDispCursor *c,
                             const char **why)
{
    uint32_t width = cursor_width(c), height = cursor_height(c);

    if (width < 1 || width > PAGODA_DISP_CURSOR_MAX_SIZE ||
        height < 1 || height > PAGODA_DISP_CURSOR_MAX_SIZE) {
        *why = "cursor size out of range";
        return PAGODA_FAULT_BAD_DISPLAY;
    }
    if (c->stride % 4 || c->stride < width * 4) {
        *why = "cursor stride not a multiple of 4 or shorter than a line";
        return PAGODA_FAULT_BAD_DISPLAY;
    }
    return check_in_segment(s, c->surface,
                            (uint64_t)c->stride * (height - 1) + width * 4, why);
}

/*
 * Check a state before it scans out: 0 if the controller can show it, else
 * the fault code, with what is wrong in @why.
 */
static uint32_t scanout_check(PagodaState *s, const PagodaScanout *so,
                              const char **why)
{
    PagodaDisplay *d = &s->disp;
    uint32_t bpp = format_bpp(so->format);
    uint32_t code;

    if (so->width < 1 || so->width > d->max_xres) {
        *why = "width out of range";
        return PAGODA_FAULT_BAD_DISPLAY;
    }
    if (so->height < 1 || so->height > d->max_yres) {
        *why = "height out of range";
        return PAGODA_FAULT_BAD_DISPLAY;
    }
    if (!bpp) {
        *why = "unknown format";
        return PAGODA_FAULT_BAD_DISPLAY;
    }
    if (so->stride % 4 || so->stride < so->width * bpp) {
        *why = "stride not a multiple of 4 or shorter than a line";
        return PAGODA_FAULT_BAD_DISPLAY;
    }
    code = check_in_segment(s, so->surface, (uint64_t)so->stride *
                            (so->height - 1) + so->width * bpp, why);
    if (!code && cursor_enabled(so)) {
        code = cursor_check(s, &so->cursor, why);
    }
    return code;
}

/* ---- Vertical blanks ----------------------------------------------------- */

static bool vblank_needed(PagodaDisplay *d)
{
    return d->flip_pending || scanout_enabled(&d->latched);
}

/*
 * Arm the vblank timer if the display needs vblanks and it is not armed
 * (the first vblank comes a period from now), stop it if none is needed.
 */
static void vblank_schedule(PagodaState *s)
{
    PagodaDisplay *d = &s->disp;

    if (!vblank_needed(d)) {
        timer_del(d->vblank_timer);
        return;
    }
    if (!timer_pending(d->vblank_timer)) {
        d->next_vblank = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                         VBLANK_PERIOD_NS;
        timer_mod(d->vblank_timer, d->next_vblank);
    }
}

static void latch(PagodaState *s)
{
    PagodaDisplay *d = &s->disp;
    PagodaScanout *so = &d->latched;
    const char *why = NULL;
    uint32_t code = 0;

    *so = d->staged;
    d->flip_pending = false;
    if (scanout_enabled(so)) {
        code = scanout_check(s, so, &why);
    }
    d->fault = code != 0;
    d->full_update = true;
    trace_pagoda_display_flip(so->surface, so->width, so->height, so->stride,
                              so->format, so->control, d->frame);
    if (!code) {
        if (scanout_enabled(so)) {
            d->black_width = so->width;
            d->black_height = so->height;
        }
        return;
    }
    trace_pagoda_display_fault(code, so->surface, so->width, so->height,
                               so->stride, so->format);
    qemu_log_mask(LOG_GUEST_ERROR,
                  "pagoda: display: %s (surface 0x%" PRIx64 " %ux%u stride %u "
                  "format 0x%08x): showing black\n", why, so->surface,
                  so->width, so->height, so->stride, so->format);
    pagoda_queue_fault(s, &(PagodaFaultRecord) {
        .context = 0,
        .engine = PAGODA_FAULT_SOURCE_DISPLAY,
        .level = 0xff,
        .access = PAGODA_ACCESS_READ,
        .code = code,
        .va = so->surface,
    });
}

static void vblank(void *opaque)
{
    PagodaState *s = opaque;
    PagodaDisplay *d = &s->disp;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    uint64_t missed = (now - d->next_vblank) / VBLANK_PERIOD_NS;

    /* a latch's fault and the interrupt go to the device's queue and status */
    QEMU_LOCK_GUARD(&s->lock);
    /*
     * The blanks of the period's grid up to now, however late the host ran
     * the timer: FRAME counts them all (one interrupt), the last is this one.
     */
    d->last_vblank = d->next_vblank + missed * VBLANK_PERIOD_NS;
    d->frame += 1 + missed;
    /* a flip latches at a blank after its FLIP write, not one run late */
    if (d->flip_pending && d->flip_time <= d->last_vblank) {
        latch(s);
    }
    pagoda_raise_irq(s, PAGODA_INT_VBLANK);
    if (vblank_needed(d)) {
        d->next_vblank = d->last_vblank + VBLANK_PERIOD_NS;
        timer_mod(d->vblank_timer, d->next_vblank);
    }
}

/* ---- Registers ----------------------------------------------------------- */

uint32_t pagoda_display_read(PagodaState *s, hwaddr addr)
{
    PagodaDisplay *d = &s->disp;
    unsigned i;

    switch (addr) {
    case PAGODA_REG_DISP_MAX_WIDTH:
        return d->max_xres;
    case PAGODA_REG_DISP_MAX_HEIGHT:
        return d->max_yres;
    case PAGODA_REG_DISP_PREF_WIDTH:
        return d->xres;
    case PAGODA_REG_DISP_PREF_HEIGHT:
        return d->yres;
    case PAGODA_REG_DISP_REFRESH:
        return PAGODA_DISP_REFRESH;
    case PAGODA_REG_DISP_CURSOR_MAX:
        return PAGODA_DISP_CURSOR_MAX_SIZE | PAGODA_DISP_CURSOR_MAX_SIZE << 16;
    case PAGODA_REG_DISP_NUM_MODES:
        return d->num_modes;
    case PAGODA_REG_DISP_MODE(0) ...
         PAGODA_REG_DISP_MODE(PAGODA_DISP_MAX_MODES) - 1:
        i = (addr - PAGODA_REG_DISP_MODE(0)) / 4;
        return i < d->num_modes ? d->modes[i] : 0;
    case PAGODA_REG_DISP_SURFACE_LO:
        return d->staged.surface;
    case PAGODA_REG_DISP_SURFACE_HI:
        return d->staged.surface >> 32;
    case PAGODA_REG_DISP_WIDTH:
        return d->staged.width;
    case PAGODA_REG_DISP_HEIGHT:
        return d->staged.height;
    case PAGODA_REG_DISP_STRIDE:
        return d->staged.stride;
    case PAGODA_REG_DISP_FORMAT:
        return d->staged.format;
    case PAGODA_REG_DISP_CONTROL:
        return d->staged.control;
    case PAGODA_REG_DISP_FLIP:
        return 0;
    case PAGODA_REG_DISP_STATUS:
        return (d->flip_pending ? PAGODA_DISP_STATUS_FLIP_PENDING : 0) |
               (scanning_out(d) ? PAGODA_DISP_STATUS_ENABLED : 0) |
               (d->fault ? PAGODA_DISP_STATUS_FAULT : 0);
    case PAGODA_REG_DISP_FRAME_LO:
        return d->frame;
    case PAGODA_REG_DISP_FRAME_HI:
        return d->frame >> 32;
    case PAGODA_REG_DISP_ACTIVE_SURFACE_LO:
        return d->latched.surface;
    case PAGODA_REG_DISP_ACTIVE_SURFACE_HI:
        return d->latched.surface >> 32;
    case PAGODA_REG_DISP_SINCE_VBLANK:
        if (d->last_vblank < 0) {
            return PAGODA_DISP_NO_VBLANK;
        }
        return MIN(qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) - d->last_vblank,
                   PAGODA_DISP_NO_VBLANK);
    case PAGODA_REG_DISP_CURSOR_LO:
        return d->staged.cursor.surface;
    case PAGODA_REG_DISP_CURSOR_HI:
        return d->staged.cursor.surface >> 32;
    case PAGODA_REG_DISP_CURSOR_SIZE:
        return d->staged.cursor.size;
    case PAGODA_REG_DISP_CURSOR_STRIDE:
        return d->staged.cursor.stride;
    case PAGODA_REG_DISP_CURSOR_POS:
        return d->staged.cursor.pos;
    }
    qemu_log_mask(LOG_GUEST_ERROR,
                  "pagoda: read of unknown register 0x%" HWADDR_PRIx "\n", addr);
    return 0;
}

void pagoda_display_write(PagodaState *s, hwaddr addr, uint32_t val)
{
    PagodaDisplay *d = &s->disp;

    switch (addr) {
    case PAGODA_REG_DISP_SURFACE_LO:
        d->staged.surface = deposit64(d->staged.surface, 0, 32, val);
        break;
    case PAGODA_REG_DISP_SURFACE_HI:
        d->staged.surface = deposit64(d->staged.surface, 32, 32, val);
        break;
    case PAGODA_REG_DISP_WIDTH:
        d->staged.width = val;
        break;
    case PAGODA_REG_DISP_HEIGHT:
        d->staged.height = val;
        break;
    case PAGODA_REG_DISP_STRIDE:
        d->staged.stride = val;
        break;
    case PAGODA_REG_DISP_FORMAT:
        d->staged.format = val;
        break;
    case PAGODA_REG_DISP_CONTROL:
        if (val & ~DISP_CONTROL_BITS) {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "pagoda: display: reserved CONTROL bits 0x%x "
                          "ignored\n", val & ~DISP_CONTROL_BITS);
        }
        d->staged.control = val & DISP_CONTROL_BITS;
        break;
    case PAGODA_REG_DISP_CURSOR_LO:
        d->staged.cursor.surface = deposit64(d->staged.cursor.surface, 0, 32,
                                             val);
        break;
    case PAGODA_REG_DISP_CURSOR_HI:
        d->staged.cursor.surface = deposit64(d->staged.cursor.surface, 32, 32,
                                             val);
        break;
    case PAGODA_REG_DISP_CURSOR_SIZE:
        d->staged.cursor.size = val;
        break;
    case PAGODA_REG_DISP_CURSOR_STRIDE:
        d->staged.cursor.stride = val;
        break;
    case PAGODA_REG_DISP_CURSOR_POS:
        d->staged.cursor.pos = val;
        break;
    case PAGODA_REG_DISP_FLIP:
        if (!d->flip_pending) {
            d->flip_time = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
        }
        d->flip_pending = true;
        vblank_schedule(s);
        break;
    default:
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pagoda: write 0x%x to read-only or unknown register "
                      "0x%" HWADDR_PRIx "\n", val, addr);
    }
}

/* ---- Console ------------------------------------------------------------- */

/*
 * Read @len bytes of the surface at @paddr as the engines would; what
 * cannot be read (an aperture page whose GART entry points outside guest
 * RAM, a GART table that cannot be read) shows as zero.
 */
static void scanout_read(PagodaState *s, uint64_t paddr, uint8_t *buf,
                         uint64_t len)
{
    PagodaMap m;

    while (len) {
        if (pagoda_mem_map(s, paddr, len, false, &m)) {
            memset(buf, 0, len);
            return;
        }
        memcpy(buf, m.host, m.len);
        pagoda_mem_unmap(s, &m, m.len);
        paddr += m.len;
        buf += m.len;
        len -= m.len;
    }
}

/*
 * Line @y of the latched surface in d->pixels, as x8r8g8b8. The line, the
 * pixels and the width are read into locals once: for all the compiler
 * knows, a store to pixels[] could change them (QEMU is built without
 * strict aliasing), which would reload them at every pixel and keep the
 * loops from being vectorised.
 */
static void scanout_line(PagodaState *s, uint32_t y)
{
    PagodaDisplay *d = &s->disp;
    const PagodaScanout *so = &d->latched;
    const uint8_t *line = d->line;
    uint32_t *pixels = d->pixels;
    uint32_t width = so->width;
    uint32_t x;

    scanout_read(s, so->surface + (uint64_t)so->stride * y, d->line,
                 (uint64_t)width * format_bpp(so->format));
    /* one plane over nothing: ARGB's alpha has nothing to blend with */
    if (format_bpp(so->format) == 4) {
        for (x = 0; x < width; x++) {
            pixels[x] = ldl_le_p(line + 4 * x) & 0xffffff;
        }
        return;
    }
    for (x = 0; x < width; x++) {
        uint32_t v = lduw_le_p(line + 2 * x);
        uint32_t r = v >> 11, g = (v >> 5) & 0x3f, b = v & 0x1f;

        pixels[x] = (r << 3 | r >> 2) << 16 | (g << 2 | g >> 4) << 8 |
                    (b << 3 | b >> 2);
    }
}

/* The latched cursor image into d->cursor, packed, as little-endian ARGB. */
static void cursor_read(PagodaState *s)
{
    PagodaDisplay *d = &s->disp;
    const PagodaDispCursor *c = &d->latched.cursor;
    uint32_t width = cursor_width(c), y;

    for (y = 0; y < cursor_height(c); y++) {
        scanout_read(s, c->surface + (uint64_t)c->stride * y,
                     (uint8_t *)(d->cursor + y * width), width * 4);
    }
}

/* Premultiplied @src over opaque @dst, one 8-bit channel at @shift. */
static uint32_t blend_channel(uint32_t src, uint32_t dst, uint32_t alpha,
                              unsigned shift)
{
    uint32_t c = ((src >> shift) & 0xff) +
                 (((dst >> shift) & 0xff) * (255 - alpha) + 127) / 255;

    return MIN(c, 255) << shift;
}

/* Draw the latched cursor's part of line @y over d->pixels. */
static void cursor_line(PagodaState *s, uint32_t y)
{
    PagodaDisplay *d = &s->disp;
    const PagodaDispCursor *c = &d->latched.cursor;
    int64_t cx = PAGODA_DISP_X(c->pos), cy = PAGODA_DISP_Y(c->pos);
    int64_t row = (int64_t)y - cy;
    int64_t x, first = MAX(cx, 0);
    int64_t end = MIN(cx + cursor_width(c), d->latched.width);
    const uint32_t *image;

    if (row < 0 || row >= cursor_height(c)) {
        return;
    }
    image = d->cursor + row * cursor_width(c);
    for (x = first; x < end; x++) {
        uint32_t src = le32_to_cpu(image[x - cx]), dst = d->pixels[x];
        uint32_t alpha = src >> 24;

        d->pixels[x] = blend_channel(src, dst, alpha, 16) |
                       blend_channel(src, dst, alpha, 8) |
                       blend_channel(src, dst, alpha, 0);
    }
}

static void display_invalidate(void *opaque)
{
    PagodaState *s = opaque;

    s->disp.full_update = true;
}

static void display_update(void *opaque)
{
    PagodaState *s = opaque;
    PagodaDisplay *d = &s->disp;
    bool on = scanning_out(d);
    bool cursor = on && cursor_enabled(&d->latched);
    uint32_t width = on ? d->latched.width : d->black_width;
    uint32_t height = on ? d->latched.height : d->black_height;
    bool full = d->full_update;
    DisplaySurface *ds = qemu_console_surface(d->con);
    int first = -1;
    uint32_t y;

    assert(width && width <= d->max_xres && height && height <= d->max_yres);
    if (!ds || ds != d->surface || surface_width(ds) != width ||
        surface_height(ds) != height) {
        d->surface = qemu_create_displaysurface(width, height);
        dpy_gfx_replace_surface(d->con, d->surface);
        ds = d->surface;
        full = true;
    }
    d->full_update = false;
    if (!on) {
        memset(d->pixels, 0, width * 4);
    }
    if (cursor) {
        cursor_read(s);
    }
    for (y = 0; y < height; y++) {
        uint8_t *dst = (uint8_t *)surface_data(ds) +
                       (size_t)y * surface_stride(ds);

        if (on) {
            scanout_line(s, y);
        }
        if (cursor) {
            cursor_line(s, y);
        }
        if (full || memcmp(dst, d->pixels, width * 4)) {
            memcpy(dst, d->pixels, width * 4);
            if (first < 0) {
                first = y;
            }
        } else if (first >= 0) {
            dpy_gfx_update(d->con, 0, first, width, y - first);
            first = -1;
        }
    }
    if (first >= 0) {
        dpy_gfx_update(d->con, 0, first, width, height - first);
    }
}

static const GraphicHwOps pagoda_display_ops = {
    .invalidate = display_invalidate,
    .gfx_update = display_update,
};

/* ---- Lifecycle ----------------------------------------------------------- */

bool pagoda_display_check_properties(PagodaState *s, Error **errp)
{
    PagodaDisplay *d = &s->disp;

    if (d->max_xres < DISP_MIN_SIZE || d->max_xres > DISP_MAX_SIZE ||
        d->max_yres < DISP_MIN_SIZE || d->max_yres > DISP_MAX_SIZE) {
        error_setg(errp, "pagoda: max-xres and max-yres must be between %u "
                   "and %u (got %ux%u)", DISP_MIN_SIZE, DISP_MAX_SIZE,
                   d->max_xres, d->max_yres);
        return false;
    }
    if (d->xres < DISP_MIN_SIZE || d->xres > d->max_xres ||
        d->yres < DISP_MIN_SIZE || d->yres > d->max_yres) {
        error_setg(errp, "pagoda: xres and yres must be between %u and "
                   "max-xres x max-yres (%ux%u) (got %ux%u)", DISP_MIN_SIZE,
                   d->max_xres, d->max_yres, d->xres, d->yres);
        return false;
    }
    return true;
}

static void add_mode(PagodaDisplay *d, uint32_t width, uint32_t height)
{
    uint32_t mode = width | height << 16;
    unsigned i;

    if (width > d->max_xres || height > d->max_yres ||
        d->num_modes == PAGODA_DISP_MAX_MODES) {
        return;
    }
    for (i = 0; i < d->num_modes; i++) {
        if (d->modes[i] == mode) {
            return;
        }
    }
    d->modes[d->num_modes++] = mode;
}

void pagoda_display_realize(PagodaState *s)
{
    PagodaDisplay *d = &s->disp;
    unsigned i;

    d->num_modes = 0;
    add_mode(d, d->xres, d->yres);
    for (i = 0; i < ARRAY_SIZE(standard_modes); i++) {
        add_mode(d, standard_modes[i].width, standard_modes[i].height);
    }
    d->line = g_malloc(d->max_xres * 4);
    d->pixels = g_new(uint32_t, d->max_xres);
    d->cursor = g_new(uint32_t, PAGODA_DISP_CURSOR_MAX_SIZE *
                                PAGODA_DISP_CURSOR_MAX_SIZE);
    d->black_width = d->xres;
    d->black_height = d->yres;
    d->full_update = true;
    d->vblank_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, vblank, s);
    d->con = graphic_console_init(DEVICE(s), 0, &pagoda_display_ops, s);
}

void pagoda_display_unrealize(PagodaState *s)
{
    PagodaDisplay *d = &s->disp;

    graphic_console_close(d->con);
    d->con = NULL;
    d->surface = NULL;
    timer_free(d->vblank_timer);
    d->vblank_timer = NULL;
    g_clear_pointer(&d->line, g_free);
    g_clear_pointer(&d->pixels, g_free);
    g_clear_pointer(&d->cursor, g_free);
}

/*
 * Reset: disabled, nothing staged or pending, FRAME back to 0, black at
 * the preferred size.
 */
void pagoda_display_reset(PagodaState *s)
{
    PagodaDisplay *d = &s->disp;

    timer_del(d->vblank_timer);
    memset(&d->staged, 0, sizeof(d->staged));
    memset(&d->latched, 0, sizeof(d->latched));
    d->flip_pending = false;
    d->fault = false;
    d->frame = 0;
    d->last_vblank = -1;
    d->black_width = d->xres;
    d->black_height = d->yres;
    d->full_update = true;
}

static const VMStateDescription vmstate_pagoda_scanout = {
    .name = "pagoda/scanout",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(surface, PagodaScanout),
        VMSTATE_UINT32(width, PagodaScanout),
        VMSTATE_UINT32(height, PagodaScanout),
        VMSTATE_UINT32(stride, PagodaScanout),
        VMSTATE_UINT32(format, PagodaScanout),
        VMSTATE_UINT32(control, PagodaScanout),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_pagoda_cursor = {
    .name = "pagoda/cursor",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(surface, PagodaDispCursor),
        VMSTATE_UINT32(size, PagodaDispCursor),
        VMSTATE_UINT32(stride, PagodaDispCursor),
        VMSTATE_UINT32(pos, PagodaDispCursor),
        VMSTATE_END_OF_LIST()
    },
};

static bool display_cursor_needed(void *opaque)
{
    PagodaState *s = opaque;
    const PagodaDispCursor zero = {};

    return memcmp(&s->disp.staged.cursor, &zero, sizeof(zero)) ||
           memcmp(&s->disp.latched.cursor, &zero, sizeof(zero));
}

/* The cursor registers, staged and latched (a stream without: none set). */
static const VMStateDescription vmstate_pagoda_display_cursor = {
    .name = "pagoda/display/cursor",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = display_cursor_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT(disp.staged.cursor, PagodaState, 1,
                       vmstate_pagoda_cursor, PagodaDispCursor),
        VMSTATE_STRUCT(disp.latched.cursor, PagodaState, 1,
                       vmstate_pagoda_cursor, PagodaDispCursor),
        VMSTATE_END_OF_LIST()
    },
};

static bool display_vblank_time_needed(void *opaque)
{
    PagodaState *s = opaque;

    return s->disp.last_vblank >= 0 || s->disp.flip_pending;
}

/*
 * The time of the last vblank (SINCE_VBLANK) and of the pending flip's
 * FLIP write, on the migrated virtual clock.
 */
static const VMStateDescription vmstate_pagoda_display_vblank_time = {
    .name = "pagoda/display/vblank-time",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = display_vblank_time_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_INT64(disp.last_vblank, PagodaState),
        VMSTATE_INT64(disp.flip_time, PagodaState),
        VMSTATE_END_OF_LIST()
    },
};

/* What a stream without the subsections means: no cursor, no vblank time. */
static int display_pre_load(void *opaque)
{
    PagodaState *s = opaque;

    memset(&s->disp.staged.cursor, 0, sizeof(s->disp.staged.cursor));
    memset(&s->disp.latched.cursor, 0, sizeof(s->disp.latched.cursor));
    s->disp.last_vblank = -1;
    s->disp.flip_time = 0;
    return 0;
}

static int display_post_load(void *opaque, int version_id)
{
    PagodaState *s = opaque;
    PagodaDisplay *d = &s->disp;
    const char *why;

    /* not from the future of the migrated clock */
    if (d->last_vblank > qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL)) {
        d->last_vblank = -1;
    }
    d->flip_time = MIN(d->flip_time, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL));
    /* derived from the latched state, not trusted from the stream */
    d->fault = scanout_enabled(&d->latched) &&
               scanout_check(s, &d->latched, &why);
    if (d->black_width < 1 || d->black_width > d->max_xres ||
        d->black_height < 1 || d->black_height > d->max_yres) {
        d->black_width = d->xres;
        d->black_height = d->yres;
    }
    /* the timer comes back armed as it was; keep the period from there */
    if (timer_pending(d->vblank_timer)) {
        d->next_vblank = timer_expire_time_ns(d->vblank_timer);
    }
    vblank_schedule(s);
    d->full_update = true;
    return 0;
}

/*
 * The display's registers, frame counter and vblank timer. The console
 * content is not migrated: it is redrawn from memory.
 */
const VMStateDescription vmstate_pagoda_display = {
    .name = "pagoda/display",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = display_pre_load,
    .post_load = display_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT(disp.staged, PagodaState, 1, vmstate_pagoda_scanout,
                       PagodaScanout),
        VMSTATE_STRUCT(disp.latched, PagodaState, 1, vmstate_pagoda_scanout,
                       PagodaScanout),
        VMSTATE_BOOL(disp.flip_pending, PagodaState),
        VMSTATE_UINT64(disp.frame, PagodaState),
        VMSTATE_UINT32(disp.black_width, PagodaState),
        VMSTATE_UINT32(disp.black_height, PagodaState),
        VMSTATE_TIMER_PTR(disp.vblank_timer, PagodaState),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_pagoda_display_cursor,
        &vmstate_pagoda_display_vblank_time,
        NULL
    },
};
