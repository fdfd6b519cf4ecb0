package dev.sluice.spring;

import dev.sluice.spring.app.TestApp;
import org.springframework.boot.test.context.SpringBootTest;

/** Spring MVC on Tomcat, the in-memory store. */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.main.web-application-type=servlet",
    "sluice.store.type=memory", "spring.autoconfigure.exclude="
    + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration"})
class MemoryMvcTest extends StarterContract {
  @Override
  String expectedStore() {
    return "memory";
  }
}
