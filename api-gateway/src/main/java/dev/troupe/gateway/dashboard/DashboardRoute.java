package dev.troupe.gateway.dashboard;

import static org.apache.pekko.http.javadsl.server.Directives.concat;
import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.getFromResource;
import static org.apache.pekko.http.javadsl.server.Directives.path;
import static org.apache.pekko.http.javadsl.server.Directives.pathEndOrSingleSlash;
import static org.apache.pekko.http.javadsl.server.Directives.pathPrefix;
import static org.apache.pekko.http.javadsl.server.Directives.respondWithHeaders;

import dev.troupe.gateway.http.ApiRoute;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Properties;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code GET /dashboard}: the web dashboard, static files from the jar (the page, its script and
 * style, and uPlot from its webjar: nothing is loaded from the internet). The page holds no data
 * and is served without the API key ({@code BearerAuth} lets {@code GET /dashboard} through); it
 * asks for the key, or takes it from the URL fragment {@code #key=…} (never sent to a server), and
 * only its data calls ({@code GET /v1/cluster}, the training-job lists) carry it.
 */
public final class DashboardRoute implements ApiRoute {
  /** The dashboard's path; {@code BearerAuth} serves its GETs without a key. */
  public static final String PATH = "dashboard";

  private static final String FILES = "dev/troupe/gateway/dashboard/";
  private static final ContentType JS = ContentTypes.parse("text/javascript; charset=UTF-8");

  /** The page may talk to this server only, and never be framed. */
  private static final List<HttpHeader> HEADERS =
      List.of(
          RawHeader.create(
              "Content-Security-Policy",
              "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline';"
                  + " frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
          RawHeader.create("X-Content-Type-Options", "nosniff"),
          RawHeader.create("Referrer-Policy", "no-referrer"),
          RawHeader.create("Cache-Control", "no-cache"));

  private final String uplot;

  public DashboardRoute() {
    this.uplot = "META-INF/resources/webjars/uplot/" + webjarVersion() + "/dist/";
  }

  @Override
  public Route route() {
    return get(
        () ->
            pathPrefix(
                PATH,
                () ->
                    respondWithHeaders(
                        HEADERS,
                        () ->
                            concat(
                                pathEndOrSingleSlash(
                                    () ->
                                        getFromResource(
                                            FILES + "index.html", ContentTypes.TEXT_HTML_UTF8)),
                                path(
                                    "dashboard.js",
                                    () -> getFromResource(FILES + "dashboard.js", JS)),
                                path(
                                    "dashboard.css",
                                    () ->
                                        getFromResource(
                                            FILES + "dashboard.css",
                                            ContentTypes.parse("text/css; charset=UTF-8"))),
                                path(
                                    "uplot.js",
                                    () -> getFromResource(uplot + "uPlot.iife.min.js", JS)),
                                path(
                                    "uplot.css",
                                    () ->
                                        getFromResource(
                                            uplot + "uPlot.min.css",
                                            ContentTypes.parse("text/css; charset=UTF-8")))))));
  }

  /** The uPlot webjar's version, from its Maven metadata on the classpath. */
  static String webjarVersion() {
    try (InputStream in =
        DashboardRoute.class.getResourceAsStream(
            "/META-INF/maven/org.webjars.npm/uplot/pom.properties")) {
      if (in == null) throw new IllegalStateException("the uPlot webjar is not on the classpath");
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("version");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
