package dev.troupe.engine.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a directory that cannot be served is told apart by, each in one line. */
class ModelFilesTest {
  @TempDir Path tmp;

  private static String why(String path) {
    String m = assertThrows(ModelLoadException.class, () -> ModelFiles.check(path)).getMessage();
    assertEquals(1, m.lines().count(), m);
    return m;
  }

  /** A servable directory: a tiny model and a tokenizer.json. */
  private Path model(String name) throws Exception {
    Path dir = TinyModels.write(tmp.resolve(name), Arch.QWEN3, DType.F32, 1, false);
    Files.writeString(dir.resolve("tokenizer.json"), "{}");
    return dir;
  }

  @Test
  void aServableDirectoryPasses() throws Exception {
    ModelFiles.check(model("ok").toString());
  }

  @Test
  void aMissingDirectoryIsNamed() {
    assertEquals(
        "no directory " + tmp.resolve("nope").toAbsolutePath(),
        why(tmp.resolve("nope").toString()));
  }

  @Test
  void aHubIdGetsToldHowToDownloadIt() {
    String m = why("Qwen/Qwen3-0.6B");
    assertTrue(m.startsWith("no directory "), m);
    assertTrue(m.contains("models are read from local directories"), m);
    assertTrue(m.contains("hf download Qwen/Qwen3-0.6B --local-dir models/Qwen3-0.6B"), m);
    assertTrue(m.contains("huggingface-cli download Qwen/Qwen3-0.6B"), m);
    assertTrue(m.contains("--model NAME=models/Qwen3-0.6B"), m);
    assertTrue(!why("/no/such/dir").contains("Hub"), "an absolute path is no Hub id");
  }

  @Test
  void aFileIsNotADirectory() throws Exception {
    Path f = Files.writeString(tmp.resolve("f"), "x");
    assertTrue(why(f.toString()).startsWith(f + " is a file, not a model directory"));
  }

  @Test
  void aDirectoryWithoutConfigJson() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("empty"));
    assertTrue(why(dir.toString()).startsWith("no config.json in " + dir + " (a Hugging Face"));
  }

  @Test
  void anUnsupportedArchitectureIsNamedBeforeLoading() throws Exception {
    Path dir = model("gpt2");
    Files.writeString(dir.resolve("config.json"), "{\"architectures\": [\"GPT2LMHeadModel\"]}");
    assertTrue(why(dir.toString()).contains("GPT2LMHeadModel"));
  }

  @Test
  void aDirectoryWithoutWeightsSaysWhatItHas() throws Exception {
    Path dir = model("noweights");
    Files.delete(dir.resolve(SafetensorsWeights.SINGLE_FILE));
    assertTrue(why(dir.toString()).startsWith("no weights in " + dir));
    Files.writeString(dir.resolve("pytorch_model.bin"), "x");
    assertTrue(
        why(dir.toString()).contains("found pytorch_model.bin; only safetensors weights are read"));
    Files.writeString(dir.resolve("model-00001-of-00002.safetensors"), "x");
    assertTrue(why(dir.toString()).contains("model-00001-of-00002.safetensors, ...) but neither"));
  }

  @Test
  void aDirectoryWithoutTokenizerJson() throws Exception {
    Path dir = model("notok");
    Files.delete(dir.resolve("tokenizer.json"));
    assertTrue(why(dir.toString()).startsWith("no tokenizer.json in " + dir));
  }
}
