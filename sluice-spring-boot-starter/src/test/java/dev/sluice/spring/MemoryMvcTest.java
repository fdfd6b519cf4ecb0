package dev.sluice.spring;

import dev.sluice.spring.app.TestApp;
import org.springframework.boot.test.context.SpringBootTest;

/** Spring MVC on Tomcat, the in-memory store. */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.main.web-application-type=servlet",
    "sluice.store.type=memory", "spring.autoconfigure.exclude="
    + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration"})
class MemoryMvcTest extends StarterContract {
  @org.springframework.beans.factory.annotation.Autowired
  TestApp.Reports reports;

  @org.junit.jupiter.api.Test
  void aRateLimitedMethodWithMaxWait_waitsForRoom_andFailsAtOnceWhenNoneCanComeInTime() {
    String user = fresh();
    for (int i = 0; i < 4; i++) {
      org.assertj.core.api.Assertions.assertThat(reports.waitFor(user)).isEqualTo("waited for " + user);
    }
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> reports.waitFor(user))
        .isInstanceOf(RateLimitExceededException.class)
        .satisfies(e -> org.assertj.core.api.Assertions.assertThat(
            ((RateLimitExceededException) e).decision().retryAfterNanos())
            .isGreaterThan(3_500_000_000_000L));   // room in an hour: beyond the 1 s it may wait
  }

  @Override
  String expectedStore() {
    return "memory";
  }
}
