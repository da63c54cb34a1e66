package dev.troupe.training;

import dev.troupe.engine.model.DemoModel;
import dev.troupe.engine.model.ModelConfigs;
import dev.troupe.engine.model.SafetensorsWeights;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import dev.troupe.protocol.cluster.ServedModels;
import java.nio.file.Path;

/**
 * Base models are the served models of {@code troupe.models}: a trainable model's {@code
 * base_model} names one, whose directory (or the built-in demo model) supplies architecture,
 * weights, tokenizer and chat template.
 */
public final class ServedBaseModels implements JobRunner.BaseModels {
  private final ServedModels served;

  public ServedBaseModels(ServedModels served) {
    this.served = served;
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
      return new Loaded(DemoModel.config(), DemoModel.weights(), t.tokenizer(), t.chatTemplate());
    }
    Path dir = Path.of(m.path());
    TokenizerBundle t = TokenizerBundle.load(dir);
    return new Loaded(
        ModelConfigs.read(dir), SafetensorsWeights.open(dir), t.tokenizer(), t.chatTemplate());
  }
}
