package dev.troupe.engine.cpu;

import static org.bytedeco.openblas.global.openblas.CblasNoTrans;
import static org.bytedeco.openblas.global.openblas.CblasRowMajor;
import static org.bytedeco.openblas.global.openblas.CblasTrans;
import static org.bytedeco.openblas.global.openblas.cblas_sgemm;

import org.bytedeco.javacpp.FloatPointer;

/**
 * GEMM-sized products (prefill) on OpenBLAS's {@code sgemm}, called directly through JavaCPP (the
 * native library ND4J bundles): the activations are staged off-heap once, and the weights are
 * converted to FP32 tile by tile ({@link #TILE_FLOATS} at a time) into a reused off-heap buffer, so
 * 16-bit weights stay 16-bit in memory and a tile's conversion (2 bytes read, 4 written per weight)
 * is small against the {@code 2·rows} flops each weight takes part in. OpenBLAS runs on its own
 * threads; the caller's team waits (parked). One instance per runner, used by one thread at a time.
 */
final class Blas implements AutoCloseable {
  /** Weights per converted tile (4 MiB of FP32). */
  static final int TILE_FLOATS = 1 << 20;

  private FloatPointer xp, yp, tp, ap, bp, cp;
  private float[] tile;

  /**
   * {@code y [rows, m.out] (+)= x [rows, m.in] · Wᵀ}, x and y row-major (natural layout), y rows
   * {@code m.out} floats apart.
   */
  void product(Matrix m, float[] x, int rows, float[] y, boolean add) {
    int in = m.in, out = m.out;
    xp = grow(xp, (long) rows * in);
    yp = grow(yp, (long) rows * out);
    xp.position(0).put(x, 0, rows * in);
    if (add) yp.position(0).put(y, 0, rows * out);
    int tileRows = Math.max(1, Math.min(out, TILE_FLOATS / Math.max(1, in)));
    tp = grow(tp, (long) tileRows * in);
    if (tile == null || tile.length < tileRows * in) tile = new float[tileRows * in];
    for (int r0 = 0; r0 < out; r0 += tileRows) {
      int r1 = Math.min(out, r0 + tileRows), n = r1 - r0;
      m.rowsTo(r0, r1, tile);
      tp.position(0).put(tile, 0, n * in);
      yp.position(r0);
      cblas_sgemm(
          CblasRowMajor,
          CblasNoTrans,
          CblasTrans,
          rows,
          n,
          in,
          1f,
          xp.position(0),
          in,
          tp.position(0),
          in,
          add ? 1f : 0f,
          yp,
          out);
    }
    yp.position(0).get(y, 0, rows * out);
  }

  /**
   * {@code c [m, n] = alpha · a [m, k] · (bT ? bᵀ : b)}: a small GEMM on heap arrays (attention of
   * a prefill chunk), staged off-heap.
   */
  void gemm(float[] a, float[] b, float[] c, int m, int n, int k, boolean bT, float alpha) {
    ap = grow(ap, (long) m * k);
    bp = grow(bp, (long) k * n);
    cp = grow(cp, (long) m * n);
    ap.position(0).put(a, 0, m * k);
    bp.position(0).put(b, 0, k * n);
    cblas_sgemm(
        CblasRowMajor,
        CblasNoTrans,
        bT ? CblasTrans : CblasNoTrans,
        m,
        n,
        k,
        alpha,
        ap,
        k,
        bp,
        bT ? k : n,
        0f,
        cp.position(0),
        n);
    cp.position(0).get(c, 0, m * n);
  }

  /** A buffer of at least {@code n} floats (grown geometrically), positioned at 0. */
  private static FloatPointer grow(FloatPointer p, long n) {
    if (p != null && p.capacity() >= n) return p.position(0);
    long cap = Math.max(n, p == null ? 0 : p.capacity() * 3 / 2);
    if (p != null) p.close();
    return new FloatPointer(cap);
  }

  @Override
  public void close() {
    for (FloatPointer p : new FloatPointer[] {xp, yp, tp, ap, bp, cp}) if (p != null) p.close();
    xp = yp = tp = ap = bp = cp = null;
  }
}
