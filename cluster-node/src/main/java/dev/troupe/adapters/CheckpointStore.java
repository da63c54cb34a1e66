package dev.troupe.adapters;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.engine.LoraAdapter;
import dev.troupe.engine.model.InMemoryWeights;
import dev.troupe.engine.model.ModelLoadException;
import dev.troupe.engine.model.SafetensorsWeights;
import dev.troupe.engine.model.SafetensorsWriter;
import dev.troupe.protocol.Json;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * LoRA checkpoints on disk in PEFT's layout, one directory per step: {@code <root>/<model
 * id>/<step, 4 digits>/adapter_config.json} and {@code adapter_model.safetensors} (tensor names
 * {@code base_model.model.<module>.lora_A.weight} [r, in] and {@code lora_B.weight} [out, r], F32),
 * plus {@code optimizer.safetensors} (AdamW moments, step in the metadata) so training resumes
 * exactly. Written by the trainer, read by the trainer ({@link #load}) and by serving workers
 * ({@link #loadAdapter}), which is why it lives outside both. Unreadable checkpoints are a {@link
 * ModelLoadException} naming the directory. {@code root} must be shared storage when trainers and
 * workers are on different nodes.
 */
public final class CheckpointStore {
  private static final String PEFT_PREFIX = "base_model.model.";
  private final Path root;

  public CheckpointStore(Path root) {
    this.root = root.toAbsolutePath().normalize();
  }

  public Path directory(String modelId, long step) {
    return root.resolve(modelId).resolve(String.format("%04d", step));
  }

  /**
   * PEFT's {@code adapter_config.json} fields we write.
   *
   * @param targets PEFT short module names ({@code q_proj}, ...)
   */
  public record AdapterConfig(String baseModel, int rank, double alpha, List<String> targets) {
    public AdapterConfig {
      targets = List.copyOf(targets);
    }
  }

  /** AdamW's state: the step count and the first and second moments per parameter. */
  public record OptimizerState(long step, Map<String, double[]> m, Map<String, double[]> v) {}

  /** A saved checkpoint's trainable parameters (trainer names) and optimizer state (or null). */
  public record Saved(Map<String, double[]> parameters, OptimizerState optimizer) {}

  /**
   * Writes step {@code step}; returns its directory.
   *
   * @param parameters trainer names ({@code <module>.lora_A} / {@code .lora_B}) to values
   * @param shapes the same names to shapes
   * @param optimizer null: none stored
   */
  public Path save(
      String modelId,
      long step,
      AdapterConfig config,
      Map<String, double[]> parameters,
      Map<String, long[]> shapes,
      OptimizerState optimizer) {
    Path dir = directory(modelId, step);
    try {
      Files.createDirectories(dir);
      Map<String, InMemoryWeights.Tensor> adapter = new LinkedHashMap<>();
      Map<String, InMemoryWeights.Tensor> opt = new LinkedHashMap<>();
      for (Map.Entry<String, double[]> e : parameters.entrySet()) {
        long[] shape = shapes.get(e.getKey());
        adapter.put(peftName(e.getKey()), tensor(e.getValue(), shape));
        if (optimizer != null && optimizer.m().containsKey(e.getKey())) {
          opt.put(e.getKey() + ".exp_avg", tensor(optimizer.m().get(e.getKey()), shape));
          opt.put(e.getKey() + ".exp_avg_sq", tensor(optimizer.v().get(e.getKey()), shape));
        }
      }
      write(dir.resolve("adapter_model.safetensors"), adapter, Map.of("format", "pt"));
      write(
          dir.resolve("optimizer.safetensors"),
          opt,
          Map.of("step", Long.toString(optimizer == null ? 0 : optimizer.step())));
      ObjectNode cfg = Json.mapper().createObjectNode();
      cfg.put("peft_type", "LORA");
      cfg.put("task_type", "CAUSAL_LM");
      cfg.put("base_model_name_or_path", config.baseModel());
      cfg.put("r", config.rank());
      cfg.put("lora_alpha", config.alpha());
      cfg.put("lora_dropout", 0.0);
      cfg.put("bias", "none");
      cfg.put("fan_in_fan_out", false);
      cfg.put("inference_mode", true);
      var targets = cfg.putArray("target_modules");
      for (String t : config.targets()) targets.add(t);
      Path tmp = dir.resolve("adapter_config.json.tmp");
      Files.write(tmp, Json.mapper().writerWithDefaultPrettyPrinter().writeValueAsBytes(cfg));
      Files.move(tmp, dir.resolve("adapter_config.json"), StandardCopyOption.ATOMIC_MOVE);
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write checkpoint " + dir, e);
    }
  }

  private static void write(
      Path file, Map<String, InMemoryWeights.Tensor> tensors, Map<String, String> metadata)
      throws IOException {
    SafetensorsWriter.write(
        file,
        new InMemoryWeights(tensors, file.toString()),
        new ArrayList<>(tensors.keySet()),
        null,
        metadata);
  }

  /** Reads a checkpoint directory written by {@link #save}. */
  public static Saved load(Path dir) {
    Map<String, double[]> params = new LinkedHashMap<>();
    try (SafetensorsWeights st =
        SafetensorsWeights.openFile(dir.resolve("adapter_model.safetensors"))) {
      for (String name : st.names()) params.put(trainerName(name), doubles(st.floats(name)));
    } catch (ModelLoadException e) {
      throw unreadable(dir, e);
    }
    Path optFile = dir.resolve("optimizer.safetensors");
    if (!Files.isRegularFile(optFile)) return new Saved(params, null);
    try (SafetensorsWeights opt = SafetensorsWeights.openFile(optFile)) {
      Map<String, double[]> m = new LinkedHashMap<>();
      Map<String, double[]> v = new LinkedHashMap<>();
      for (String name : opt.names()) {
        if (name.endsWith(".exp_avg"))
          m.put(name.substring(0, name.length() - 8), doubles(opt.floats(name)));
        else if (name.endsWith(".exp_avg_sq"))
          v.put(name.substring(0, name.length() - 11), doubles(opt.floats(name)));
      }
      long step = Long.parseLong(opt.metadata().getOrDefault("step", "0"));
      return new Saved(params, new OptimizerState(step, m, v));
    } catch (ModelLoadException e) {
      throw unreadable(dir, e);
    }
  }

  /**
   * A checkpoint directory as a served {@link LoraAdapter} of version {@code version} (rank and
   * alpha from {@code adapter_config.json}); what a worker calls on {@code AdapterCheckpoint}.
   */
  public static LoraAdapter loadAdapter(Path dir, int version) {
    JsonNode cfg;
    try {
      cfg = Json.mapper().readTree(dir.resolve("adapter_config.json").toFile());
    } catch (IOException e) {
      throw unreadable(dir, e);
    }
    Map<String, float[]> a = new LinkedHashMap<>();
    Map<String, float[]> b = new LinkedHashMap<>();
    try (SafetensorsWeights st =
        SafetensorsWeights.openFile(dir.resolve("adapter_model.safetensors"))) {
      for (String name : st.names()) {
        String n = trainerName(name);
        if (n.endsWith(".lora_A")) a.put(n.substring(0, n.length() - 7), st.floats(name));
        else if (n.endsWith(".lora_B")) b.put(n.substring(0, n.length() - 7), st.floats(name));
      }
    } catch (ModelLoadException e) {
      throw unreadable(dir, e);
    }
    return new LoraAdapter(version, cfg.path("r").asInt(), cfg.path("lora_alpha").asDouble(), a, b);
  }

  private static ModelLoadException unreadable(Path dir, Exception e) {
    return new ModelLoadException("cannot read checkpoint " + dir + ": " + e.getMessage(), e);
  }

  /**
   * {@code model.layers.0.self_attn.q_proj.lora_A} → {@code
   * base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight}.
   */
  static String peftName(String trainerName) {
    return PEFT_PREFIX + trainerName + ".weight";
  }

  static String trainerName(String peftName) {
    String s =
        peftName.startsWith(PEFT_PREFIX) ? peftName.substring(PEFT_PREFIX.length()) : peftName;
    return s.endsWith(".weight") ? s.substring(0, s.length() - 7) : s;
  }

  private static InMemoryWeights.Tensor tensor(double[] v, long[] shape) {
    float[] f = new float[v.length];
    for (int i = 0; i < f.length; i++) f[i] = (float) v[i];
    return new InMemoryWeights.Tensor(f, shape);
  }

  private static double[] doubles(float[] f) {
    double[] d = new double[f.length];
    for (int i = 0; i < d.length; i++) d[i] = f[i];
    return d;
  }

  /** Lists the step directories of a model, ascending. */
  public List<Long> steps(String modelId) {
    Path dir = root.resolve(modelId);
    if (!Files.isDirectory(dir)) return List.of();
    try (var s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString())
          .filter(n -> n.matches("\\d+"))
          .map(Long::parseLong)
          .sorted()
          .toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
