package dev.troupe.deploy.k8s;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * An overlay of {@code deploy/k8s} rendered by kustomize ({@code kubectl kustomize}, the kustomize
 * built into kubectl) and parsed: the objects {@code kubectl apply -k} would send.
 */
final class RenderedManifests {
  final List<JsonNode> objects;

  private RenderedManifests(List<JsonNode> objects) {
    this.objects = List.copyOf(objects);
  }

  /** The kubectl on the PATH, or null. */
  static String kubectl() {
    for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
      Path p = Path.of(dir, "kubectl");
      if (Files.isExecutable(p)) return p.toString();
    }
    return null;
  }

  static RenderedManifests render(Path overlay) throws IOException, InterruptedException {
    Process p =
        new ProcessBuilder(kubectl(), "kustomize", overlay.toString())
            .redirectError(ProcessBuilder.Redirect.DISCARD)
            .start();
    byte[] out = p.getInputStream().readAllBytes();
    if (!p.waitFor(2, TimeUnit.MINUTES) || p.exitValue() != 0)
      throw new IllegalStateException("kubectl kustomize " + overlay + " failed");
    ObjectMapper yaml = new ObjectMapper(new YAMLFactory());
    List<JsonNode> docs = new ArrayList<>();
    try (MappingIterator<JsonNode> it =
        yaml.readerFor(JsonNode.class).readValues(new String(out, StandardCharsets.UTF_8))) {
      while (it.hasNext()) {
        JsonNode doc = it.next();
        if (doc != null && !doc.isMissingNode() && !doc.isNull()) docs.add(doc);
      }
    }
    return new RenderedManifests(docs);
  }

  List<JsonNode> ofKind(String kind) {
    return objects.stream().filter(o -> o.path("kind").asText().equals(kind)).toList();
  }

  JsonNode named(String kind, String name) {
    for (JsonNode o : ofKind(kind))
      if (o.path("metadata").path("name").asText().equals(name)) return o;
    return null;
  }
}
