/*
 * ka_protocol.h: the protocol module's public face in one include.
 *
 * The proxy and policy code include this rather than picking headers one by
 * one: the reader and writer, the arena, headers and their version rules,
 * every generated codec with its version table, ApiVersions clamping and
 * decode error text. Everything here is pure C with no I/O.
 */
#ifndef KA_PROTOCOL_H
#define KA_PROTOCOL_H

#include "ka_api_table.h"
#include "ka_apiversions.h"
#include "ka_arena.h"
#include "ka_codec.h"
#include "ka_codecs.h"
#include "ka_decode_error.h"
#include "ka_error.h"
#include "ka_header.h"
#include "ka_reader.h"
#include "ka_writer.h"

#endif
