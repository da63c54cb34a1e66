package dev.troupe.training.nd4j;

import java.util.Arrays;
import java.util.List;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.ops.transforms.Transforms;

/**
 * The LM head on trained positions only, in chunks of {@link #CHUNK} rows: log-probabilities of the
 * targets and entropies forward, {@code d(loss)/d(final norm output)} backward. The softmax of a
 * chunk is kept for the backward when the caller gives a list, else recomputed.
 */
final class LmHead {
  static final int CHUNK = 128;
  private final INDArray w; // [V, H]
  private final Nd4jOps ops;

  LmHead(INDArray w, Nd4jOps ops) {
    this.w = w;
    this.ops = ops;
  }

  /**
   * Fills {@code logprobs[i]} (of {@code tokens[i + 1]}) and {@code entropies[i]} for {@code i} in
   * {@code targets}.
   */
  void forward(
      INDArray f,
      int[] tokens,
      int[] targets,
      double[] logprobs,
      double[] entropies,
      List<INDArray> keep) {
    for (int c0 = 0; c0 < targets.length; c0 += CHUNK) {
      int[] rows = Arrays.copyOfRange(targets, c0, Math.min(targets.length, c0 + CHUNK));
      // z [C, V]: logits of this chunk of target positions
      INDArray z = ops.mm(f.getRows(rows), w, false, true);
      INDArray lse = Nd4jOps.logSumExp(z);
      INDArray p = Transforms.exp(z.subColumnVector(lse), false);
      INDArray pz = p.mul(z).sum(1);
      for (int k = 0; k < rows.length; k++) {
        int i = rows[k];
        double l = lse.getDouble(k, 0);
        entropies[i] = l - pz.getDouble(k);
        logprobs[i] = z.getDouble(k, tokens[i + 1]) - l;
      }
      if (keep != null) keep.add(p);
    }
  }

  /** Logits of one row {@code [1, H]} as log-probabilities over the vocabulary. */
  double[] logprobs(INDArray row) {
    INDArray z = ops.mm(row, w, false, true); // [1, V]
    return z.subColumnVector(Nd4jOps.logSumExp(z))
        .castTo(org.nd4j.linalg.api.buffer.DataType.DOUBLE)
        .data()
        .asDouble();
  }

  /**
   * d(loss)/d(f) for dL/dlogprob g: dz = g·(onehot(target) − softmax(z)), df = dz · W. Uses the
   * softmax chunks kept by the forward pass, else recomputes them.
   */
  INDArray backward(INDArray f, int[] tokens, int[] targets, double[] g, List<INDArray> kept) {
    INDArray df = Nd4j.create(ops.dtype, f.rows(), f.columns());
    for (int c0 = 0, chunk = 0; c0 < targets.length; c0 += CHUNK, chunk++) {
      int[] rows = Arrays.copyOfRange(targets, c0, Math.min(targets.length, c0 + CHUNK));
      boolean any = false;
      for (int i : rows) any |= g[i] != 0;
      if (!any) continue;
      INDArray dz;
      if (kept != null) {
        dz = kept.get(chunk);
      } else {
        INDArray z = ops.mm(f.getRows(rows), w, false, true);
        dz = Transforms.exp(z.subiColumnVector(Nd4jOps.logSumExp(z)), false);
      }
      double[] gc = new double[rows.length];
      for (int k = 0; k < rows.length; k++) gc[k] = g[rows[k]];
      INDArray gCol = Nd4j.create(gc, new long[] {rows.length, 1}, ops.dtype);
      dz.muliColumnVector(gCol.neg());
      for (int k = 0; k < rows.length; k++)
        if (gc[k] != 0) {
          int y = tokens[rows[k] + 1];
          dz.putScalar(k, y, dz.getDouble(k, y) + gc[k]);
        }
      INDArray dRows = ops.mm(dz, w, false, false); // [C, H]
      for (int k = 0; k < rows.length; k++) df.getRow(rows[k]).addi(dRows.getRow(k));
    }
    return df;
  }
}
