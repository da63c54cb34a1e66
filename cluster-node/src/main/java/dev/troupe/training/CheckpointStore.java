package dev.troupe.training;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.protocol.Json;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * LoRA checkpoints on disk in PEFT's layout, one directory per step: {@code <root>/<model
 * id>/<step, 4 digits>/adapter_config.json} and {@code adapter_model.safetensors} (tensor names
 * {@code base_model.model.<module>.lora_A.weight} [r, in] and {@code lora_B.weight} [out, r]), plus
 * {@code optimizer.safetensors} (AdamW moments, step in the metadata) so training resumes exactly.
 * {@code root} must be shared storage when trainers and workers are on different nodes.
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

  /** A saved checkpoint's trainable parameters (trainer names) and optimizer state. */
  public record Saved(Map<String, double[]> parameters, AdamW.State optimizer) {}

  /**
   * Writes step {@code step}; returns its directory.
   *
   * @param parameters trainer names ({@code <module>.lora_A} / {@code .lora_B}) to values
   * @param shapes the same names to shapes
   */
  public Path save(
      String modelId,
      long step,
      String baseModel,
      LoraSpec spec,
      Map<String, double[]> parameters,
      Map<String, long[]> shapes,
      AdamW.State optimizer) {
    Path dir = directory(modelId, step);
    try {
      Files.createDirectories(dir);
      Map<String, SafetensorsFile.Tensor> adapter = new LinkedHashMap<>();
      Map<String, SafetensorsFile.Tensor> opt = new LinkedHashMap<>();
      for (Map.Entry<String, double[]> e : parameters.entrySet()) {
        adapter.put(peftName(e.getKey()), tensor(e.getValue(), shapes.get(e.getKey())));
        if (optimizer != null && optimizer.m().containsKey(e.getKey())) {
          opt.put(
              e.getKey() + ".exp_avg",
              tensor(optimizer.m().get(e.getKey()), shapes.get(e.getKey())));
          opt.put(
              e.getKey() + ".exp_avg_sq",
              tensor(optimizer.v().get(e.getKey()), shapes.get(e.getKey())));
        }
      }
      SafetensorsFile.write(
          dir.resolve("adapter_model.safetensors"), adapter, Map.of("format", "pt"));
      SafetensorsFile.write(
          dir.resolve("optimizer.safetensors"),
          opt,
          Map.of("step", Long.toString(optimizer == null ? 0 : optimizer.step())));
      ObjectNode cfg = Json.mapper().createObjectNode();
      cfg.put("peft_type", "LORA");
      cfg.put("task_type", "CAUSAL_LM");
      cfg.put("base_model_name_or_path", baseModel);
      cfg.put("r", spec.rank());
      cfg.put("lora_alpha", spec.alpha());
      cfg.put("lora_dropout", 0.0);
      cfg.put("bias", "none");
      cfg.put("fan_in_fan_out", false);
      cfg.put("inference_mode", true);
      var targets = cfg.putArray("target_modules");
      for (String t : spec.targets()) targets.add(t);
      Path tmp = dir.resolve("adapter_config.json.tmp");
      Files.write(tmp, Json.mapper().writerWithDefaultPrettyPrinter().writeValueAsBytes(cfg));
      Files.move(
          tmp, dir.resolve("adapter_config.json"), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write checkpoint " + dir, e);
    }
  }

  /** Reads a checkpoint directory written by {@link #save}. */
  public static Saved load(Path dir) {
    try {
      SafetensorsFile.Contents adapter =
          SafetensorsFile.read(dir.resolve("adapter_model.safetensors"));
      Map<String, double[]> params = new LinkedHashMap<>();
      adapter.tensors().forEach((name, t) -> params.put(trainerName(name), doubles(t.values())));
      AdamW.State state = null;
      Path optFile = dir.resolve("optimizer.safetensors");
      if (Files.isRegularFile(optFile)) {
        SafetensorsFile.Contents opt = SafetensorsFile.read(optFile);
        Map<String, double[]> m = new LinkedHashMap<>();
        Map<String, double[]> v = new LinkedHashMap<>();
        opt.tensors()
            .forEach(
                (name, t) -> {
                  if (name.endsWith(".exp_avg"))
                    m.put(name.substring(0, name.length() - 8), doubles(t.values()));
                  else if (name.endsWith(".exp_avg_sq"))
                    v.put(name.substring(0, name.length() - 11), doubles(t.values()));
                });
        state = new AdamW.State(Long.parseLong(opt.metadata().getOrDefault("step", "0")), m, v);
      }
      return new Saved(params, state);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read checkpoint " + dir, e);
    }
  }

  /**
   * A checkpoint directory as a served {@link dev.troupe.engine.LoraAdapter} of version {@code
   * version} (rank and alpha from {@code adapter_config.json}); what a worker calls on {@code
   * AdapterCheckpoint}.
   */
  public static dev.troupe.engine.LoraAdapter loadAdapter(Path dir, int version) {
    try {
      var cfg = Json.mapper().readTree(dir.resolve("adapter_config.json").toFile());
      SafetensorsFile.Contents st = SafetensorsFile.read(dir.resolve("adapter_model.safetensors"));
      Map<String, float[]> a = new LinkedHashMap<>();
      Map<String, float[]> b = new LinkedHashMap<>();
      st.tensors()
          .forEach(
              (name, t) -> {
                String n = trainerName(name);
                if (n.endsWith(".lora_A")) a.put(n.substring(0, n.length() - 7), t.values());
                else if (n.endsWith(".lora_B")) b.put(n.substring(0, n.length() - 7), t.values());
              });
      return new dev.troupe.engine.LoraAdapter(
          version, cfg.path("r").asInt(), cfg.path("lora_alpha").asDouble(), a, b);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read checkpoint " + dir, e);
    }
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

  private static SafetensorsFile.Tensor tensor(double[] v, long[] shape) {
    float[] f = new float[v.length];
    for (int i = 0; i < f.length; i++) f[i] = (float) v[i];
    return new SafetensorsFile.Tensor(f, shape);
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
