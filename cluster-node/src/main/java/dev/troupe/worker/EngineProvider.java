package dev.troupe.worker;

import dev.troupe.engine.core.EngineSettings;
import dev.troupe.engine.runner.DeviceSettings;
import dev.troupe.engine.serving.Engine;
import dev.troupe.engine.serving.Engines;
import dev.troupe.engine.structured.StructuredOutputSettings;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;

/** Opens the engine of one model replica; tests substitute small engines. */
@FunctionalInterface
public interface EngineProvider {
  Engine open(ServedModel model, int replica);

  /** Loads the model's weights and tokenizer with the given sizing. */
  static EngineProvider loading(EngineSettings settings) {
    return loading(settings, DeviceSettings.CPU);
  }

  /** Loads each replica on the device {@code device} picks (GPUs round-robin for several). */
  static EngineProvider loading(EngineSettings settings, DeviceSettings device) {
    return loading(settings, device, StructuredOutputSettings.defaults());
  }

  /** As above, with the node's structured-output bounds and cache sizes. */
  static EngineProvider loading(
      EngineSettings settings, DeviceSettings device, StructuredOutputSettings structured) {
    return (model, replica) -> Engines.open(model, settings, device, structured);
  }
}
