package dev.troupe.engine.serving;

import dev.troupe.engine.ComputeSettings;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.model.ModelConfigs;
import dev.troupe.engine.model.ModelFiles;
import dev.troupe.engine.runner.DeviceSettings;
import dev.troupe.engine.runner.ModelRunners;
import dev.troupe.engine.structured.StructuredOutputSettings;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;
import dev.troupe.scheduler.SchedulingPolicy;
import java.nio.file.Path;

/** Opens the engine of a served model: its weights, tokenizer and chat template. */
public final class Engines {
  private Engines() {}

  /**
   * Loads {@code model} (a Hugging Face directory, or the built-in demo model) into a new engine.
   *
   * @throws IllegalArgumentException when the directory is missing or cannot be run
   */
  public static Engine open(ServedModel model, EngineSettings settings) {
    return open(model, settings, DeviceSettings.CPU);
  }

  /**
   * Loads {@code model} on the device {@code device} asks for (CPU or a GPU).
   *
   * @throws IllegalArgumentException when the directory is missing or cannot be run
   */
  public static Engine open(ServedModel model, EngineSettings settings, DeviceSettings device) {
    return open(model, settings, device, StructuredOutputSettings.defaults());
  }

  /**
   * Loads {@code model} on {@code device}, with the model's reasoning parser and the node's
   * structured-output bounds.
   *
   * @throws dev.troupe.engine.model.ModelLoadException when the directory is missing or cannot be
   *     run (one line saying why)
   */
  public static Engine open(
      ServedModel model,
      EngineSettings settings,
      DeviceSettings device,
      StructuredOutputSettings structured) {
    ModelRunner runner;
    TokenizerBundle text;
    // The demo model has no generation_config.json: OpenAI's defaults apply to it.
    SamplingDefaults defaults = SamplingDefaults.NONE;
    if (model.isDemo()) {
      runner =
          ModelRunners.open(
              null,
              device,
              settings.numBlocks(),
              settings.blockSize(),
              settings.maxNumBatchedTokens());
      text = TokenizerBundle.demo();
    } else {
      ModelFiles.check(model.path());
      Path dir = Path.of(model.path());
      text = TokenizerBundle.loadShared(dir);
      runner =
          ModelRunners.open(
              dir,
              device,
              settings.numBlocks(),
              settings.blockSize(),
              settings.maxNumBatchedTokens());
      defaults = ModelConfigs.samplingDefaults(dir);
    }
    // vLLM's --chat-template: served instead of the tokenizer's
    if (model.chatTemplate() != null) text = text.withChatTemplate(model.chatTemplate());
    try {
      Warmup.run(
          runner,
          model.name(),
          settings.maxNumSeqs(),
          settings.maxNumBatchedTokens(),
          ComputeSettings.jvm().warmup().toMillis());
    } catch (RuntimeException | Error e) {
      runner.close();
      throw e;
    }
    return Engine.create(
        model.name(),
        runner,
        text,
        settings,
        SchedulingPolicy.parse(model.schedulingPolicy()),
        text::compileTemplate,
        defaults,
        model.reasoningParser(),
        structured);
  }
}
