package dev.troupe.training.nd4j;

import java.util.Map;
import org.nd4j.linalg.api.ndarray.INDArray;

/**
 * One projection of the model definition in training: {@code y = x Wᵀ + b + s·(x Aᵀ) Bᵀ} with
 * frozen {@code W} (or, under full fine-tuning, trainable {@code W}), and its backward.
 */
final class LoraLinear {
  final String module; // e.g. model.layers.0.self_attn.q_proj
  INDArray w; // [out, in]
  INDArray bias; // [out] or null
  boolean lora;
  INDArray a; // [r, in]
  INDArray b; // [out, r]
  String weightParam; // set under full fine-tuning
  private final double scale;
  private final Nd4jOps ops;

  LoraLinear(String module, INDArray w, double scale, Nd4jOps ops) {
    this.module = module;
    this.w = w;
    this.scale = scale;
    this.ops = ops;
  }

  /**
   * @param loraInputs where {@code x Aᵀ} is kept for the backward, or null (forward only)
   */
  INDArray forward(INDArray x, Map<String, INDArray> loraInputs) {
    INDArray y = ops.mm(x, w, false, true);
    if (bias != null) y.addiRowVector(bias);
    if (lora) {
      INDArray xa = ops.mm(x, a, false, true); // [T, r]
      y.addi(ops.mm(xa, b, false, true).muli(scale));
      if (loraInputs != null) loraInputs.put(module, xa);
    }
    return y;
  }

  INDArray backward(
      INDArray dy, INDArray x, Map<String, INDArray> loraInputs, Map<String, INDArray> grads) {
    INDArray dx = ops.mm(dy, w, false, false);
    if (lora) {
      INDArray xa = loraInputs.get(module);
      INDArray dyB = ops.mm(dy, b, false, false); // [T, r]
      Nd4jOps.accumulate(grads, module + ".lora_A", ops.mm(dyB, x, true, false).muli(scale));
      Nd4jOps.accumulate(grads, module + ".lora_B", ops.mm(dy, xa, true, false).muli(scale));
      dx.addi(ops.mm(dyB, a, false, false).muli(scale));
    }
    if (weightParam != null) Nd4jOps.accumulate(grads, weightParam, ops.mm(dy, x, true, false));
    return dx;
  }
}
