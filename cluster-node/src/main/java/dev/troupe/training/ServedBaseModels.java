package dev.troupe.training;

import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.DemoModel;
import dev.troupe.engine.model.ModelConfigs;
import dev.troupe.engine.model.RoundedWeights;
import dev.troupe.engine.model.SafetensorsWeights;
import dev.troupe.engine.model.ServedDType;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import dev.troupe.protocol.cluster.ServedModels;
import java.nio.file.Path;

/**
 * Base models are the served models of {@code troupe.models}: a trainable model's {@code
 * base_model} names one, whose directory (or the built-in demo model) supplies architecture,
 * weights, tokenizer and chat template. The weights are seen in the dtype the model is served in
 * ({@link RoundedWeights}), so training adapts the weights serving computes with.
 */
public final class ServedBaseModels implements Trainers.BaseModels {
  private final ServedModels served;
  private final String dtype;

  /**
   * @param dtype the dtype the models are served in ({@code troupe.worker.device.dtype}, vLLM's
   *     {@code --dtype})
   */
  public ServedBaseModels(ServedModels served, String dtype) {
    this.served = served;
    this.dtype = ServedDType.check(dtype);
  }

  @Override
  public Loaded load(String baseModel) {
    ServedModels.ServedModel m =
        served
            .find(baseModel)
            .orElseThrow(
                () ->
                    new IllegalArgumentException(
                        "base model " + baseModel + " is not served here"));
    if (m.isDemo()) {
      TokenizerBundle t = TokenizerBundle.demo();
      WeightSource w = DemoModel.weights();
      return new Loaded(
          DemoModel.config(),
          RoundedWeights.of(w, ServedDType.resolve(dtype, null, w)),
          t.tokenizer(),
          t.chatTemplate());
    }
    Path dir = Path.of(m.path());
    TokenizerBundle t = TokenizerBundle.loadShared(dir);
    WeightSource w = SafetensorsWeights.open(dir);
    DType served = ServedDType.resolve(dtype, ModelConfigs.torchDType(dir), w);
    return new Loaded(
        ModelConfigs.read(dir), RoundedWeights.of(w, served), t.tokenizer(), t.chatTemplate());
  }
}
