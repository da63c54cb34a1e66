package dev.troupe.training.nd4j;

import dev.troupe.engine.ModelConfig;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * The model definition's {@code ATTENTION} step over a whole packed row ({@code softmax(q kᵀ / √d +
 * mask) v}, grouped-query heads), and its backward, which recomputes each head's probabilities.
 * Attention is block-diagonal causal over the row's segments, within Mistral's sliding window.
 */
final class CausalAttention {
  private static final double MASKED = -1e9;
  private final int heads;
  private final int group;
  private final int d;
  private final int window;
  private final Nd4jOps ops;

  CausalAttention(ModelConfig c, Nd4jOps ops) {
    this.heads = c.numHeads();
    this.group = c.numHeads() / c.numKvHeads();
    this.d = c.headDim();
    this.window = c.slidingWindow();
    this.ops = ops;
  }

  /**
   * {@code [T, T]}: 0 where position j is visible from i (same segment, j ≤ i, and with Mistral's
   * sliding window W, j > i − W, as serving computes it), else −1e9.
   */
  INDArray mask(int[] segments) {
    int n = segments.length;
    double[] m = new double[n * n];
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        m[i * n + j] =
            j <= i && segments[j] == segments[i] && (window <= 0 || j > i - window) ? 0.0 : MASKED;
    return Nd4j.create(m, new long[] {n, n}, ops.dtype);
  }

  INDArray forward(INDArray q, INDArray k, INDArray v, INDArray mask) {
    double scale = 1.0 / Math.sqrt(d);
    INDArray out = Nd4j.create(ops.dtype, q.rows(), q.columns());
    for (int h = 0; h < heads; h++) {
      int g = h / group;
      INDArray qh = Nd4jOps.cols(q, h, d);
      INDArray kg = Nd4jOps.cols(k, g, d);
      INDArray vg = Nd4jOps.cols(v, g, d);
      // p [T, T] = softmax(q kᵀ / sqrt(d) + mask)
      INDArray p = Nd4jOps.softmaxRows(ops.mm(qh, kg, false, true).muli(scale).addi(mask));
      Nd4jOps.view(out, h, d).assign(ops.mm(p, vg, false, false));
    }
    return out;
  }

  /** Gradients {@code {dq, dk, dv}} given d(attn). */
  INDArray[] backward(INDArray dOut, INDArray q, INDArray k, INDArray v, INDArray mask) {
    double scale = 1.0 / Math.sqrt(d);
    INDArray dq = Nd4j.create(ops.dtype, q.rows(), q.columns());
    INDArray dk = Nd4j.create(ops.dtype, k.rows(), k.columns());
    INDArray dv = Nd4j.create(ops.dtype, v.rows(), v.columns());
    for (int h = 0; h < heads; h++) {
      int g = h / group;
      INDArray qh = Nd4jOps.cols(q, h, d);
      INDArray kg = Nd4jOps.cols(k, g, d);
      INDArray vg = Nd4jOps.cols(v, g, d);
      INDArray dOh = Nd4jOps.cols(dOut, h, d);
      INDArray p = Nd4jOps.softmaxRows(ops.mm(qh, kg, false, true).muli(scale).addi(mask));
      // dV += Pᵀ dO; dP = dO vᵀ; dS = P ∘ (dP − rowsum(dP ∘ P)); dQ = dS k / √d; dK += dSᵀ q / √d
      Nd4jOps.view(dv, g, d).addi(ops.mm(p, dOh, true, false));
      INDArray dP = ops.mm(dOh, vg, false, true);
      INDArray rowDot = dP.mul(p).sum(true, 1);
      INDArray dS = p.muli(dP.subiColumnVector(rowDot));
      Nd4jOps.view(dq, h, d).assign(ops.mm(dS, kg, false, false).muli(scale));
      Nd4jOps.view(dk, g, d).addi(ops.mm(dS, qh, true, false).muli(scale));
    }
    return new INDArray[] {dq, dk, dv};
  }
}
