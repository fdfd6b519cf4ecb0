package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spring.app.TestApp;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;

/** {@code sluice.dry-run=true}: decisions are made and counted, nothing is refused. */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.main.web-application-type=servlet", "sluice.store.type=memory",
        "sluice.dry-run=true", "spring.autoconfigure.exclude="
        + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration"})
class DryRunTest extends StarterContract {
  @Override
  String expectedStore() {
    return "memory";
  }

  @Test
  @Override
  void aRuleLimitsItsPathsPerKey_with429_RetryAfter_andTheRateLimitFields() throws Exception {
    String key = fresh();
    for (int i = 0; i < 6; i++) {
      HttpResponse<String> r = get("/api/hello", "X-Api-Key", key);
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(header(r, "RateLimit")).isNull();
    }
    assertThat(get("/api/hello").statusCode()).isEqualTo(200);   // no key: would be 400
    // decided all the same: the bucket is full
    assertThat(limiters.get("api").check("x-api-key:" + key).isAllowed()).isFalse();
  }

  @Test
  @Override
  void aQueueHoldsWhatFits_forItsTurnAtTheLeakRate_andRefusesTheRest() throws Exception {
    String key = fresh();
    for (int i = 0; i < 4; i++) {   // decided, but neither held nor refused
      assertThat(get("/paced/hello", "X-Api-Key", key).statusCode()).isEqualTo(200);
    }
  }

  @Test
  @Override
  void costsComeFromAHeader_andEveryLimitOfAPolicyMustAdmit() throws Exception {
    String key = fresh();
    for (int i = 0; i < 3; i++) {
      assertThat(send("POST", "/api/batch", "X-Api-Key", key, "X-Rows", "7").statusCode())
          .isEqualTo(200);
    }
  }

  @Test
  @Override
  void rateLimitedMethods_answer429_withRetryAfter_andTheFields() throws Exception {
    String user = fresh();
    for (int i = 0; i < 6; i++) {
      assertThat(get("/reports/" + user).statusCode()).isEqualTo(200);
      assertThat(get("/reactive/" + user).statusCode()).isEqualTo(200);
    }
    assertThat(limiters.get("reports").check(user).isAllowed()).isFalse();
  }
}
