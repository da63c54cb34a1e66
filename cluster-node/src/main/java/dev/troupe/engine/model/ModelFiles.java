package dev.troupe.engine.model;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Checks that a path is a Hugging Face model directory this node can serve, before anything is
 * loaded: the directory exists, and holds {@code config.json} (with a supported architecture),
 * safetensors weights and {@code tokenizer.json}. Each failure is one line saying what is missing
 * and, where it helps, what to do (a Hub id is not downloaded: models are read from local
 * directories). The launcher runs it for every model before starting a node; the engine runs it
 * before loading.
 */
public final class ModelFiles {
  /** A Hugging Face Hub repository id, {@code owner/name}. */
  private static final Pattern HUB_ID = Pattern.compile("[A-Za-z0-9][\\w.-]*/[\\w.-]+");

  private ModelFiles() {}

  /**
   * @param path the model's directory as configured ({@code --model NAME=DIR})
   * @throws ModelLoadException saying what is wrong, in one line
   */
  public static void check(String path) {
    Path dir;
    try {
      dir = Path.of(path);
    } catch (InvalidPathException e) {
      throw new ModelLoadException("'" + path + "' is not a valid path: " + e.getReason());
    }
    if (!Files.exists(dir)) throw new ModelLoadException(missing(path, dir));
    if (!Files.isDirectory(dir))
      throw new ModelLoadException(dir + " is a file, not a model directory" + WHAT_A_DIR_HOLDS);
    if (!Files.isRegularFile(dir.resolve("config.json")))
      throw new ModelLoadException("no config.json in " + dir + WHAT_A_DIR_HOLDS);
    ModelConfigs.read(dir); // parses it: an unsupported architecture is named now, not later
    if (!Files.isRegularFile(dir.resolve(SafetensorsWeights.INDEX_FILE))
        && !Files.isRegularFile(dir.resolve(SafetensorsWeights.SINGLE_FILE)))
      throw new ModelLoadException(noWeights(dir));
    if (!Files.isRegularFile(dir.resolve("tokenizer.json")))
      throw new ModelLoadException("no tokenizer.json in " + dir + WHAT_A_DIR_HOLDS);
  }

  private static final String WHAT_A_DIR_HOLDS =
      " (a Hugging Face model directory holds config.json, model.safetensors or its shards with"
          + " model.safetensors.index.json, tokenizer.json and tokenizer_config.json)";

  private static String missing(String path, Path dir) {
    String msg = "no directory " + dir.toAbsolutePath().normalize();
    if (!HUB_ID.matcher(path).matches()) return msg;
    String local = "models/" + path.substring(path.indexOf('/') + 1);
    return msg
        + "; if "
        + path
        + " is a Hugging Face Hub id: models are read from local directories, not downloaded, so"
        + " download it first (hf download "
        + path
        + " --local-dir "
        + local
        + ", or with an older huggingface_hub: huggingface-cli download "
        + path
        + " --local-dir "
        + local
        + ") and serve that directory (--model NAME="
        + local
        + ")";
  }

  private static String noWeights(Path dir) {
    List<String> names;
    try (Stream<Path> files = Files.list(dir)) {
      names = files.map(f -> f.getFileName().toString()).sorted().toList();
    } catch (IOException e) {
      names = List.of();
    }
    String shards = names.stream().filter(n -> n.endsWith(".safetensors")).findFirst().orElse(null);
    if (shards != null)
      return dir
          + " has safetensors files ("
          + shards
          + ", ...) but neither "
          + SafetensorsWeights.SINGLE_FILE
          + " nor "
          + SafetensorsWeights.INDEX_FILE
          + " naming its shards";
    String other =
        names.stream()
            .filter(n -> n.endsWith(".bin") || n.endsWith(".pt") || n.endsWith(".gguf"))
            .findFirst()
            .orElse(null);
    if (other != null)
      return "no safetensors weights in "
          + dir
          + " (found "
          + other
          + "; only safetensors weights are read: download the model's safetensors files)";
    return "no weights in "
        + dir
        + ": neither "
        + SafetensorsWeights.SINGLE_FILE
        + " nor "
        + SafetensorsWeights.INDEX_FILE
        + " with its shards";
  }
}
