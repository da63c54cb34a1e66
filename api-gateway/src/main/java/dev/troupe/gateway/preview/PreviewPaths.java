package dev.troupe.gateway.preview;

import org.apache.pekko.http.javadsl.server.PathMatcher0;
import org.apache.pekko.http.javadsl.server.PathMatcher1;
import org.apache.pekko.http.javadsl.server.PathMatchers;

/**
 * Path matchers for the {@code /v1/preview/...} endpoints, so each route names only its own
 * segments: {@code collection("models")} is {@code /v1/preview/models}, {@code member("models",
 * "checkpoints")} is {@code /v1/preview/models/{id}/checkpoints} and extracts the raw id (the route
 * parses it inside its method directive, so a wrong method still answers 405, not 404).
 */
public final class PreviewPaths {
  private PreviewPaths() {}

  /** {@code /v1/preview/{collection}}. */
  public static PathMatcher0 collection(String collection) {
    return PathMatchers.segment("v1").slash("preview").slash(collection);
  }

  /** {@code /v1/preview/{collection}/{id}/{tail...}}, extracting the raw {@code id} segment. */
  public static PathMatcher1<String> member(String collection, String... tail) {
    PathMatcher1<String> m = collection(collection).slash(PathMatchers.segment());
    for (String segment : tail) m = m.slash(segment);
    return m;
  }
}
