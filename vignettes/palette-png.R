# The vignettes' figures as palette PNGs. knitr draws each figure with bmp(), which writes
# the pixels uncompressed, and palette_png() (the chunks' fig.process) turns the file into a
# PNG of at most 64 colours; every other pixel (in practice, a shade of anti-aliasing) takes
# the nearest of them. At 50-60 dpi such a PNG looks the same as the 24-bit one png()
# writes, at a third of its size. The figures are embedded in the HTML, and the installed
# package must stay under 5 MB. A vignette reads this file with sys.source() in a chunk
# that is not tangled.

# Pixels of a BMP as written by R's bmp(): 8-bit palette or 24-bit, uncompressed.
read_bmp <- function(path) {
  b <- readBin(path, "raw", file.size(path))
  int <- function(at, size) {
    readBin(b[at + seq_len(size)], "integer", size = size, signed = size == 4L, endian = "little")
  }
  offset <- int(10L, 4L)
  width <- int(18L, 4L)
  height <- int(22L, 4L)
  bits <- int(28L, 2L)
  if (int(30L, 4L) != 0L || !bits %in% c(8L, 24L)) {
    stop("not an uncompressed 8- or 24-bit BMP: ", path)
  }
  stride <- (bits / 8L * width + 3L) %/% 4L * 4L
  px <- matrix(as.integer(b[offset + seq_len(stride * abs(height))]), nrow = stride)
  if (height > 0L) px <- px[, rev(seq_len(height)), drop = FALSE]  # bottom-up rows
  if (bits == 8L) {
    n_pal <- int(46L, 4L)
    if (n_pal == 0L) n_pal <- 256L
    pal <- matrix(as.integer(b[54L + seq_len(4L * n_pal)]), nrow = 4L)
    pal <- pal[3L, ] * 65536L + pal[2L, ] * 256L + pal[1L, ]  # BGRx
    col <- pal[px[seq_len(width), , drop = FALSE] + 1L]
  } else {
    bgr <- px[seq_len(3L * width), , drop = FALSE]
    col <- bgr[c(FALSE, FALSE, TRUE), ] * 65536L + bgr[c(FALSE, TRUE, FALSE), ] * 256L +
      bgr[c(TRUE, FALSE, FALSE), ]
  }
  matrix(col, nrow = width)  # one column per row of the picture, top first
}

# A PNG chunk: length, type, data and the CRC-32 of type and data.
png_chunk <- local({
  crc_table <- vapply(0:255, function(n) {
    for (k in 1:8) {
      n <- if (bitwAnd(n, 1L)) bitwXor(bitwShiftR(n, 1L), -306674912L) else bitwShiftR(n, 1L)
    }
    n
  }, integer(1))
  function(type, data) {
    bytes <- c(charToRaw(type), data)
    crc <- -1L
    for (x in as.integer(bytes)) {
      crc <- bitwXor(crc_table[bitwAnd(bitwXor(crc, x), 255L) + 1L], bitwShiftR(crc, 8L))
    }
    c(writeBin(length(data), raw(), size = 4L, endian = "big"), bytes,
      writeBin(bitwNot(crc), raw(), size = 4L, endian = "big"))
  }
})

# Replaces the BMP at `path` by a palette PNG of at most `colours` colours; returns its path.
palette_png <- function(path, colours = 64L, spread = 24) {
  col <- read_bmp(path)
  u <- sort(unique(as.vector(col)))
  by_freq <- u[order(-tabulate(match(col, u), length(u)), u)]
  channels <- function(x) cbind(x %/% 65536L, x %/% 256L %% 256L, x %% 256L)
  # the most frequent colours, but first those at least `spread` away from every colour
  # taken, so that a thin line's colour is not crowded out by shades of a frequent one
  rgb_u <- channels(by_freq)
  taken <- logical(length(by_freq))
  for (i in seq_along(by_freq)) {
    if (sum(taken) == colours) break
    away <- colSums((t(rgb_u[taken, , drop = FALSE]) - rgb_u[i, ])^2) >= spread^2
    taken[i] <- all(away)
  }
  pal <- c(by_freq[taken], by_freq[!taken])[seq_len(min(colours, length(u)))]
  other <- setdiff(u, pal)
  idx <- matrix(match(col, pal), nrow = nrow(col))
  if (length(other)) {
    d <- outer(rowSums(channels(other)^2), rowSums(channels(pal)^2), "+") -
      2 * channels(other) %*% t(channels(pal))
    idx[is.na(idx)] <- max.col(-d, ties.method = "first")[match(col[is.na(idx)], other)]
  }
  idx <- idx - 1L
  scanlines <- as.raw(rbind(0L, idx))  # filter type 0 before every row
  out <- sub("\\.bmp$", ".png", path)
  writeBin(c(as.raw(c(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)),
             png_chunk("IHDR", c(writeBin(dim(col), raw(), size = 4L, endian = "big"),
                                 as.raw(c(8L, 3L, 0L, 0L, 0L)))),  # 8 bits, palette
             png_chunk("PLTE", as.raw(t(channels(pal)))),
             png_chunk("IDAT", memCompress(scanlines, "gzip")),
             png_chunk("IEND", raw())), out)
  unlink(path)
  out
}

knitr::opts_chunk$set(dev = "bmp", fig.process = palette_png)
# knitr records a plot on png() when dev = "png" but on pdf(NULL) for other devices, whose
# font metrics would size legends and margins differently; record on png() as before.
# (knit() restores the option when it returns.)
options(device = function(width, height, ...) {
  grDevices::png(tempfile(), width, height, units = "in", res = knitr::opts_current$get("dpi"))
})
