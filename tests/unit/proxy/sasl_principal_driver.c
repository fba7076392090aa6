/*
 * sasl_principal_driver.c: ka_sasl_token_principal over stdin, for
 * sasl_principal_kafka_model.py, which compares it with a port of Kafka's
 * own parsing. Each input line is "<mech> <token in hex>" (1 PLAIN,
 * 2 SCRAM); each output line "<rc> <principal in hex>".
 */
#include <stdio.h>
#include <string.h>

#include "ka_sasl_principal.h"

#define LINE_MAX_BYTES 8192

int main(void)
{
    static char line[LINE_MAX_BYTES];
    static uint8_t token[LINE_MAX_BYTES / 2];
    char out[KA_PRINCIPAL_MAX];

    while (fgets(line, sizeof(line), stdin) != NULL) {
        size_t n = 0;
        enum ka_sasl_mech mech = line[0] == '1' ? KA_SASL_MECH_PLAIN : KA_SASL_MECH_SCRAM;
        for (const char *p = line + 2; p[0] != '\0' && p[1] != '\0' && p[0] != '\n'; p += 2) {
            unsigned v;
            if (sscanf(p, "%2x", &v) != 1 || n == sizeof(token))
                return 2;
            token[n++] = (uint8_t)v;
        }
        int rc = ka_sasl_token_principal(mech, token, n, out, sizeof(out));
        printf("%d ", rc);
        for (size_t i = 0; out[i] != '\0'; i++)
            printf("%02x", (unsigned char)out[i]);
        printf("\n");
    }
    return 0;
}
