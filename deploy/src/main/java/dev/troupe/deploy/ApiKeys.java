package dev.troupe.deploy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.List;
import java.util.function.Consumer;

/**
 * The API keys a node accepts: the configured ones ({@code --api-key}, {@code TROUPE_API_KEYS}), or
 * else one generated on first start, shown once and kept in {@code <data-dir>/api-key} (owner-only)
 * so restarts keep accepting it.
 */
final class ApiKeys {
  static final String FILE = "api-key";

  private ApiKeys() {}

  /**
   * @param announce told the new key when one is generated (printed once by the launcher)
   */
  static List<String> resolve(List<String> configured, Path dataDir, Consumer<String> announce) {
    if (!configured.isEmpty()) return configured;
    Path file = dataDir.resolve(FILE);
    try {
      if (Files.isRegularFile(file)) {
        String key = Files.readString(file, StandardCharsets.UTF_8).trim();
        if (!key.isEmpty()) return List.of(key);
      }
      Files.createDirectories(dataDir);
      byte[] random = new byte[24];
      new SecureRandom().nextBytes(random);
      String key = "sk-troupe-" + Base64.getUrlEncoder().withoutPadding().encodeToString(random);
      Files.writeString(file, key + "\n", StandardCharsets.UTF_8);
      try {
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
      } catch (UnsupportedOperationException e) {
        // not a POSIX file system: the directory's own permissions apply
      }
      announce.accept(key);
      return List.of(key);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read or create the API key file " + file, e);
    }
  }
}
