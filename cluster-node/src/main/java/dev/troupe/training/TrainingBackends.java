package dev.troupe.training;

import com.typesafe.config.Config;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.cuda.CudaProbe;
import dev.troupe.engine.cuda.Gpu;
import dev.troupe.engine.cuda.GpuProvider;
import dev.troupe.engine.runner.DeviceSettings;
import dev.troupe.engine.runner.Devices;
import java.util.List;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Chooses what trains: where the node serves its models ({@code troupe.worker.device}, {@code
 * --device}): the CPU ({@code cpu}, or {@code auto} without a usable GPU) trains with ND4J; a GPU
 * ({@code cuda}, {@code cuda:N}, or {@code auto} with one) trains on that GPU ({@code cuda:N}'s,
 * else the first usable one). {@code troupe.training.backend} may name a {@link
 * TrainingBackend.Factory} class instead (tests: the CPU emulation of the CUDA kernels).
 */
public final class TrainingBackends {
  private static final Logger log = LoggerFactory.getLogger(TrainingBackends.class);

  private TrainingBackends() {}

  /** Training on the CPU with ND4J. */
  public static TrainingBackend.Factory cpu() {
    return Nd4jTrainingBackend.factory();
  }

  /**
   * Training on a GPU: {@code gpus} opens the device for a model's config (a fresh {@link Gpu} per
   * model trainer, closed with it).
   */
  public static TrainingBackend.Factory cuda(String description, Function<ModelConfig, Gpu> gpus) {
    return CudaTrainingBackend.factory(description, gpus);
  }

  /** The backend for the device replicas are served on. */
  public static TrainingBackend.Factory forDevice(DeviceSettings device) {
    if (device.isCpu()) return cpu();
    if (!device.gpuProvider().isEmpty()) { // tests: the GPUs replicas are served on
      GpuProvider gpus = GpuProvider.named(device.gpuProvider());
      return cuda("GPUs of " + device.gpuProvider(), cfg -> gpus.open(cfg, 16));
    }
    CudaProbe.Result probe = CudaProbe.get();
    List<CudaProbe.Device> usable = probe.usableDevices();
    if (usable.isEmpty()) {
      if (device.isAuto()) return cpu();
      throw new Devices.NoDeviceException("--device " + device.device() + ": " + probe.summary());
    }
    int want = device.cudaOrdinal();
    CudaProbe.Device d = usable.get(0);
    if (want >= 0) {
      d = null;
      for (CudaProbe.Device u : usable) if (u.ordinal() == want) d = u;
      if (d == null)
        throw new Devices.NoDeviceException(
            "--device cuda:" + want + ": no such usable GPU; " + probe.summary());
    }
    int ordinal = d.ordinal();
    return cuda("cuda:" + ordinal + " " + d.describe(), cfg -> CudaProbe.open(ordinal));
  }

  /**
   * From the node's config: {@code troupe.training.backend} when set (a factory class with a public
   * no-argument constructor), else {@link #forDevice} for {@code troupe.worker.device}. Logged
   * once.
   */
  public static TrainingBackend.Factory fromConfig(Config root) {
    String name = root.getString("troupe.training.backend").trim();
    TrainingBackend.Factory f;
    if (name.isEmpty() && root.getBoolean("troupe.training.full-fine-tune")) {
      log.info("Training runs on the CPU: full fine-tuning has no GPU implementation");
      return cpu();
    } else if (name.isEmpty()) {
      f = forDevice(DeviceSettings.fromConfig(root.getConfig("troupe.worker.device")));
    } else {
      try {
        f =
            Class.forName(name)
                .asSubclass(TrainingBackend.Factory.class)
                .getConstructor()
                .newInstance();
      } catch (ReflectiveOperationException | ClassCastException e) {
        throw new IllegalArgumentException(
            "troupe.training.backend = "
                + name
                + ": not a TrainingBackend.Factory with a public no-argument constructor ("
                + e
                + ")",
            e);
      }
    }
    log.info("Training runs on {}", f.describe());
    return f;
  }
}
