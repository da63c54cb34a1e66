package dev.troupe.training.nd4j;

import dev.troupe.engine.model.RopeTables;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;

/**
 * The model definition's rotary embedding ({@link RopeTables}, {@code rotate_half}) applied to
 * {@code [T, heads·d]} at given positions; the inverse rotation (its transpose) is the backward.
 */
final class Rotary {
  private final INDArray cos; // [T·heads, d/2]
  private final INDArray sin;
  private final int heads;
  private final int d;

  private Rotary(INDArray cos, INDArray sin, int heads, int d) {
    this.cos = cos;
    this.sin = sin;
    this.heads = heads;
    this.d = d;
  }

  static Rotary of(RopeTables rope, int[] positions, int heads, DataType dtype) {
    int n = positions.length;
    int half = rope.pairs();
    double[] cos = new double[n * heads * half];
    double[] sin = new double[n * heads * half];
    double[] c = new double[half], s = new double[half];
    for (int t = 0; t < n; t++) {
      rope.angles(positions[t], c, s);
      for (int h = 0; h < heads; h++) {
        System.arraycopy(c, 0, cos, (t * heads + h) * half, half);
        System.arraycopy(s, 0, sin, (t * heads + h) * half, half);
      }
    }
    long[] shape = {(long) n * heads, half};
    return new Rotary(
        Nd4j.create(cos, shape, dtype), Nd4j.create(sin, shape, dtype), heads, rope.headDim());
  }

  INDArray apply(INDArray x, boolean inverse) {
    int half = d / 2;
    long n = x.rows();
    INDArray r = x.dup('c').reshape(n * heads, d);
    INDArray x1 = r.get(NDArrayIndex.all(), NDArrayIndex.interval(0, half));
    INDArray x2 = r.get(NDArrayIndex.all(), NDArrayIndex.interval(half, d));
    INDArray s = inverse ? sin.neg() : sin;
    // out1 = x1 cos − x2 sin; out2 = x2 cos + x1 sin
    INDArray o1 = x1.mul(cos).subi(x2.mul(s));
    INDArray o2 = x2.mul(cos).addi(x1.mul(s));
    return Nd4j.hstack(o1, o2).reshape(n, (long) heads * d);
  }
}
