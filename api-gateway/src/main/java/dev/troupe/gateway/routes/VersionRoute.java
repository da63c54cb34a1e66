package dev.troupe.gateway.routes;

import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.path;

import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.JsonBodies;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.Properties;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code GET /version}: {@code {"version":"x.y.z"}}, the build's version. Open without an API key.
 */
public final class VersionRoute implements ApiRoute {
  private final String version;

  public VersionRoute() {
    this(buildVersion());
  }

  public VersionRoute(String version) {
    this.version = version;
  }

  /** The project version this module was built as. */
  public static String buildVersion() {
    try (InputStream in =
        VersionRoute.class.getResourceAsStream("/dev/troupe/gateway/version.properties")) {
      if (in == null) return "unknown";
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("version", "unknown");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public Route route() {
    return path("version", () -> get(() -> JsonBodies.completeJson(Map.of("version", version))));
  }
}
