/* The C ABI in use: datasheet lookup, an inference plan, a training plan,
 * detection on a fake root (argv[1]), an error, and four threads planning
 * at once. Every string the library returns is freed: run under valgrind
 * with --leak-check=full it reports no leak and no error.
 *
 *   cc -o example example.c -I../include ../../../target/debug/libai_hwaccel_c.a -lpthread -ldl -lm
 *   ./example ../../ai-hwaccel/tests/fixtures/roots/mi300x-spx-8gpu [ROUNDS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ai_hwaccel.h"

static int failures = 0;

/* Call f on request; print the first `show` characters of the result. */
static char *check(const char *what, AiHwaccelStatus (*f)(const char *, char **),
                   const char *request, AiHwaccelStatus expected) {
    char *out = NULL;
    AiHwaccelStatus status = f(request, &out);
    if (status != expected) {
        fprintf(stderr, "%s: status %d, expected %d (%s)\n", what, (int)status, (int)expected,
                ai_hwaccel_last_error() ? ai_hwaccel_last_error() : "no message");
        failures++;
    } else if (status == AI_HWACCEL_STATUS_OK) {
        printf("%s: ok, %zu bytes of JSON\n", what, strlen(out));
    } else {
        printf("%s: error %d as expected: %s\n", what, (int)status, ai_hwaccel_last_error());
    }
    return out;
}

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 3; i++) {
        char *out = NULL;
        if (ai_hwaccel_plan("{\"model\": \"llama-3.1-8b\", \"devices\": \"2xl4\"}", &out)
                != AI_HWACCEL_STATUS_OK || strstr(out, "\"feasible\": true") == NULL) {
            fprintf(stderr, "thread: plan failed: %s\n", ai_hwaccel_last_error());
            failures++;
        }
        ai_hwaccel_free(out);
        if (ai_hwaccel_specs("{\"query\": 7}", &out) != AI_HWACCEL_STATUS_INVALID_ARGUMENT
                || out != NULL || strstr(ai_hwaccel_last_error(), "query") == NULL) {
            fprintf(stderr, "thread: expected an invalid-argument error\n");
            failures++;
        }
    }
    return NULL;
}

/* One round of every call; main runs argv[2] rounds (default 1), so a
 * leak would grow with the count. */
static void round_of_calls(const char *root) {
    char *out;

    out = check("specs h100-sxm", ai_hwaccel_specs, "{\"query\": \"h100-sxm\"}",
                AI_HWACCEL_STATUS_OK);
    if (out && !strstr(out, "\"id\": \"h100-sxm\"")) {
        fprintf(stderr, "specs: no h100-sxm entry\n");
        failures++;
    }
    ai_hwaccel_free(out);

    out = check("plan llama-3.1-70b on 4xh100-sxm", ai_hwaccel_plan,
                "{\"model\": \"llama-3.1-70b\", \"devices\": \"4xh100-sxm\", \"max_plans\": 2}",
                AI_HWACCEL_STATUS_OK);
    ai_hwaccel_free(out);

    out = check("train 7b ZeRO-3 on 8xa100-80gb", ai_hwaccel_train,
                "{\"model\": \"7b\", \"devices\": \"8xa100-80gb\", \"zero\": 3}",
                AI_HWACCEL_STATUS_OK);
    ai_hwaccel_free(out);

    if (root) {
        char request[4096];
        snprintf(request, sizeof request, "{\"root\": \"%s\", \"no_exec\": true}", root);
        out = check("detect on a fake root", ai_hwaccel_detect, request, AI_HWACCEL_STATUS_OK);
        if (out && !strstr(out, "\"devices\"")) failures++;
        ai_hwaccel_free(out);
    }

    out = check("plan with an unknown option", ai_hwaccel_plan,
                "{\"model\": \"7b\", \"batchsize\": 2}", AI_HWACCEL_STATUS_INVALID_ARGUMENT);
    ai_hwaccel_free(out); /* NULL: ignored */
    out = check("detect on a missing root", ai_hwaccel_detect,
                "{\"root\": \"/nonexistent/root\"}", AI_HWACCEL_STATUS_NOT_FOUND);
    ai_hwaccel_free(out);

    pthread_t threads[4];
    for (int i = 0; i < 4; i++) pthread_create(&threads[i], NULL, worker, NULL);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    printf("4 threads: %s\n", failures ? "FAILED" : "ok");
}

int main(int argc, char **argv) {
    printf("ai-hwaccel %s\n", ai_hwaccel_version());
    int rounds = argc > 2 ? atoi(argv[2]) : 1;
    for (int i = 0; i < rounds; i++) round_of_calls(argc > 1 ? argv[1] : NULL);

    if (failures) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    printf("all ok\n");
    return 0;
}
