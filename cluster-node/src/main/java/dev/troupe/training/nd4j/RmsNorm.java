package dev.troupe.training.nd4j;

import java.util.Map;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.ops.transforms.Transforms;

/** RMSNorm {@code y = x / sqrt(mean(x²) + eps) ∘ g} over rows, with its backward. */
final class RmsNorm {
  final String name;
  INDArray g; // [D]
  final boolean trainable;

  RmsNorm(String name, INDArray g, boolean trainable) {
    this.name = name;
    this.g = g;
    this.trainable = trainable;
  }

  /** What the backward needs of one forward. */
  static final class Cache {
    INDArray r;
    INDArray xhat;
  }

  INDArray forward(INDArray x, double eps, Cache c) {
    // r [N, 1] = 1 / sqrt(mean(x²) + eps); xhat = x·r
    INDArray r = Transforms.pow(x.mul(x).mean(true, 1).addi(eps), -0.5, false);
    INDArray xhat = x.mulColumnVector(r);
    c.r = r;
    c.xhat = xhat;
    return xhat.mulRowVector(g);
  }

  INDArray backward(INDArray dy, double eps, Cache c, Map<String, INDArray> grads) {
    // dx = r·(dxhat − xhat·mean(dxhat ∘ xhat)), dxhat = dy ∘ g; dg = Σ_rows dy ∘ xhat
    INDArray dxhat = dy.mulRowVector(g);
    INDArray dot = dxhat.mul(c.xhat).mean(true, 1);
    INDArray dx = dxhat.subi(c.xhat.mulColumnVector(dot)).muliColumnVector(c.r);
    if (trainable && grads != null) Nd4jOps.accumulate(grads, name, dy.mul(c.xhat).sum(0));
    return dx;
  }
}
