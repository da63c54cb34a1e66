package dev.troupe.training.nd4j;

import java.util.Map;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.nd4j.linalg.ops.transforms.Transforms;

/** The ND4J operations the training passes share, in one working precision. */
final class Nd4jOps {
  final DataType dtype;

  Nd4jOps(DataType dtype) {
    this.dtype = dtype;
  }

  /** a·b with optional transposes into a new row-major result (BLAS flags, no copies of a or b). */
  INDArray mm(INDArray a, INDArray b, boolean ta, boolean tb) {
    long rows = ta ? a.columns() : a.rows();
    long cols = tb ? b.rows() : b.columns();
    INDArray c = Nd4j.createUninitialized(dtype, new long[] {rows, cols}, 'c');
    return Nd4j.gemm(a, b, c, ta, tb, 1.0, 0.0);
  }

  /** Columns {@code [head·d, (head+1)·d)} of {@code x}, copied. */
  static INDArray cols(INDArray x, int head, int d) {
    return view(x, head, d).dup('c');
  }

  /** Columns {@code [head·d, (head+1)·d)} of {@code x}, a view (writes go to x). */
  static INDArray view(INDArray x, int head, int d) {
    return x.get(NDArrayIndex.all(), NDArrayIndex.interval(head * d, (head + 1) * d));
  }

  static INDArray softmaxRows(INDArray s) {
    INDArray max = s.max(true, 1);
    INDArray e = Transforms.exp(s.subiColumnVector(max), false);
    return e.diviColumnVector(e.sum(true, 1));
  }

  static INDArray logSumExp(INDArray z) {
    INDArray max = z.max(true, 1);
    INDArray s = Transforms.exp(z.subColumnVector(max), false).sum(true, 1);
    return Transforms.log(s, false).addi(max);
  }

  /** grads[name] += g (the first contribution is kept as is). */
  static void accumulate(Map<String, INDArray> grads, String name, INDArray g) {
    INDArray prev = grads.get(name);
    if (prev == null) grads.put(name, g);
    else prev.addi(g);
  }
}
