package dev.troupe.engine.cpu;

import static org.bytedeco.openblas.global.openblas.CblasNoTrans;
import static org.bytedeco.openblas.global.openblas.CblasRowMajor;
import static org.bytedeco.openblas.global.openblas.CblasTrans;
import static org.bytedeco.openblas.global.openblas.blas_get_num_threads;
import static org.bytedeco.openblas.global.openblas.blas_set_num_threads;
import static org.bytedeco.openblas.global.openblas.cblas_sgemm;

import org.bytedeco.javacpp.FloatPointer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * GEMM-sized products (prefill) on OpenBLAS's {@code sgemm}, called directly through JavaCPP (the
 * native library ND4J bundles), for a range of the weight's output rows: the activations are staged
 * off-heap, and the weights are converted to FP32 tile by tile ({@link #TILE_FLOATS} at a time)
 * into a reused off-heap buffer, so 16-bit weights stay 16-bit in memory and a tile's conversion (2
 * bytes read, 4 written per weight) is small against the {@code 2·rows} flops each weight takes
 * part in.
 *
 * <p>OpenBLAS runs single-threaded ({@link #singleThreaded}): the runner's {@link Team} members
 * each call it on their own rows, with their own instance, so the team's threads are the only ones
 * computing. With OpenBLAS's own threads, which busy-wait for the next call for a while after each
 * one (2²⁸ cycles by default), a worker thread took a quarter of a core from the decode steps that
 * followed every prefill, on a machine with as many cores as team members; moving the GEMMs onto
 * the team made the small model's batch-1 decode 11–15% faster and its prefill 1.5–1.8× (the
 * conversion to FP32 now runs on every member too), docs/engine.md.
 */
final class Blas implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Blas.class);

  /** Weights per converted tile (4 MiB of FP32). */
  static final int TILE_FLOATS = 1 << 20;

  private FloatPointer xp, yp, tp, ap, bp, cp;
  private float[] tile = new float[0], yTile = new float[0];

  private static int singleThreadedSteps; // runners inside a BLAS step (replicas in one JVM)
  private static int threadsBefore; // OpenBLAS's count when the first of them entered

  /**
   * Sets OpenBLAS to one thread for a step's GEMMs, until the matching {@link #restore}: the
   * setting is process-wide and shared with ND4J (training), which raises it to the core count when
   * it initializes, so the count found when the first concurrent step began is put back when the
   * last one ends.
   */
  static synchronized void singleThreaded() {
    if (singleThreadedSteps++ > 0) return;
    threadsBefore = blas_get_num_threads();
    if (threadsBefore != 1) {
      blas_set_num_threads(1);
      log.debug("OpenBLAS at 1 thread for prefill steps (was {})", threadsBefore);
    }
  }

  /** Ends a {@link #singleThreaded} step. */
  static synchronized void restore() {
    if (--singleThreadedSteps == 0 && threadsBefore > 1) blas_set_num_threads(threadsBefore);
  }

  /**
   * Output rows {@code [o0, o1)} of {@code y [rows, m.out] (+)= x [rows, m.in] · Wᵀ}, x and y
   * row-major (natural layout), y rows {@code m.out} floats apart.
   */
  void product(Matrix m, float[] x, int rows, float[] y, boolean add, int o0, int o1) {
    int in = m.in, out = m.out;
    xp = grow(xp, (long) rows * in);
    xp.position(0).put(x, 0, rows * in);
    int tileRows = Math.max(1, Math.min(o1 - o0, TILE_FLOATS / Math.max(1, in)));
    tp = grow(tp, (long) tileRows * in);
    yp = grow(yp, (long) rows * tileRows);
    if (tile.length < tileRows * in) tile = new float[tileRows * in];
    if (add && yTile.length < rows * tileRows) yTile = new float[rows * tileRows];
    for (int r0 = o0; r0 < o1; r0 += tileRows) {
      int r1 = Math.min(o1, r0 + tileRows), n = r1 - r0;
      m.rowsTo(r0, r1, tile);
      tp.position(0).put(tile, 0, n * in);
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
          0f,
          yp.position(0),
          n);
      if (add) {
        yp.position(0).get(yTile, 0, rows * n);
        for (int t = 0; t < rows; t++)
          for (int j = 0, at = t * out + r0; j < n; j++) y[at + j] += yTile[t * n + j];
      } else for (int t = 0; t < rows; t++) yp.position((long) t * n).get(y, t * out + r0, n);
    }
    yp.position(0);
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
