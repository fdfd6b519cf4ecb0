package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spring.app.TestApp;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;

/**
 * A gateway and the service behind it both limit: the response carries the fields of both. By
 * default as two lines of each list field (which HTTP reads as one list); with
 * {@code sluice.headers-combine=true} as one line holding both members, on MVC and WebFlux.
 */
class CombinedHeadersTest {
  static final String NO_DATABASE = "spring.autoconfigure.exclude="
      + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration";

  abstract static class Contract {
    @org.springframework.boot.test.web.server.LocalServerPort
    int port;

    HttpResponse<String> get(String path, String header, String value) throws Exception {
      return java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(
              java.net.URI.create("http://127.0.0.1:" + port + path)).header(header, value)
          .build(), HttpResponse.BodyHandlers.ofString());
    }

    @org.springframework.beans.factory.annotation.Value("${sluice.headers-combine:false}")
    boolean combined;

    /** WebFlux: a handler's ResponseEntity headers replace the filter's fields. */
    @org.springframework.beans.factory.annotation.Value(
        "#{'${spring.main.web-application-type}' == 'reactive'}")
    boolean replaced;

    @Test
    void theGatewaysAndTheServicesFields() throws Exception {
      HttpResponse<String> r = get("/api/proxied", "X-Api-Key",
          java.util.UUID.randomUUID().toString());
      assertThat(r.statusCode()).isEqualTo(200);
      if (combined) {
        assertThat(r.headers().allValues("RateLimit-Policy"))
            .containsExactly("\"api\";q=3;w=10800, \"down\";q=10;w=1");
        assertThat(r.headers().allValues("RateLimit")).singleElement().asString()
            .startsWith("\"api\";r=2;t=").endsWith(", \"down\";r=9;t=1");
      } else if (replaced) {
        assertThat(r.headers().allValues("RateLimit-Policy"))
            .containsExactly("\"down\";q=10;w=1");
      } else {
        assertThat(r.headers().allValues("RateLimit-Policy"))
            .containsExactlyInAnyOrder("\"api\";q=3;w=10800", "\"down\";q=10;w=1");
      }
    }
  }

  @Nested
  @SpringBootTest(classes = TestApp.class,
      webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
      properties = {"spring.main.web-application-type=servlet", "sluice.store.type=memory", NO_DATABASE,
          "sluice.headers-combine=true"})
  class MvcCombined extends Contract {
  }

  @Nested
  @SpringBootTest(classes = TestApp.class,
      webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
      properties = {"spring.main.web-application-type=reactive", "sluice.store.type=memory", NO_DATABASE,
          "sluice.headers-combine=true"})
  class WebFluxCombined extends Contract {
  }

  @Nested
  @SpringBootTest(classes = TestApp.class,
      webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
      properties = {"spring.main.web-application-type=servlet", "sluice.store.type=memory", NO_DATABASE})
  class MvcByDefault extends Contract {
  }

  @Nested
  @SpringBootTest(classes = TestApp.class,
      webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
      properties = {"spring.main.web-application-type=reactive", "sluice.store.type=memory",
          NO_DATABASE})
  class WebFluxByDefault extends Contract {
  }
}
