/* ferry: NBD protocol constants, from doc/proto.md of NetworkBlockDevice/nbd
 * (extended headers from the EXTENDED_HEADERS section merged in 2023).
 * All fields travel big-endian. */
#ifndef FERRY_NBD_PROTO_H
#define FERRY_NBD_PROTO_H

/* Handshake magics. */
#define NBD_MAGIC                   0x4e42444d41474943ull   /* "NBDMAGIC" */
#define NBD_IHAVEOPT                0x49484156454F5054ull   /* "IHAVEOPT" */
#define NBD_OLDSTYLE_MAGIC          0x00420281861253ull     /* cliserv_magic */
#define NBD_REP_MAGIC               0x3e889045565a9ull      /* option replies */

/* Handshake flags (server, 16 bits) and client flags (32 bits). */
#define NBD_FLAG_FIXED_NEWSTYLE     (1u << 0)
#define NBD_FLAG_NO_ZEROES          (1u << 1)
#define NBD_FLAG_C_FIXED_NEWSTYLE   (1u << 0)
#define NBD_FLAG_C_NO_ZEROES        (1u << 1)

/* Transmission flags (16 bits). */
#define NBD_FLAG_HAS_FLAGS          (1u << 0)
#define NBD_FLAG_READ_ONLY          (1u << 1)
#define NBD_FLAG_SEND_FLUSH         (1u << 2)
#define NBD_FLAG_SEND_FUA           (1u << 3)
#define NBD_FLAG_ROTATIONAL         (1u << 4)
#define NBD_FLAG_SEND_TRIM          (1u << 5)
#define NBD_FLAG_SEND_WRITE_ZEROES  (1u << 6)
#define NBD_FLAG_SEND_DF            (1u << 7)
#define NBD_FLAG_CAN_MULTI_CONN     (1u << 8)
#define NBD_FLAG_SEND_RESIZE        (1u << 9)
#define NBD_FLAG_SEND_CACHE         (1u << 10)
#define NBD_FLAG_SEND_FAST_ZERO     (1u << 11)
#define NBD_FLAG_BLOCK_STAT_PAYLOAD (1u << 12)

/* Options. */
#define NBD_OPT_EXPORT_NAME         1
#define NBD_OPT_ABORT               2
#define NBD_OPT_LIST                3
#define NBD_OPT_STARTTLS            5
#define NBD_OPT_INFO                6
#define NBD_OPT_GO                  7
#define NBD_OPT_STRUCTURED_REPLY    8
#define NBD_OPT_LIST_META_CONTEXT   9
#define NBD_OPT_SET_META_CONTEXT    10
#define NBD_OPT_EXTENDED_HEADERS    11

/* Option reply types; errors have bit 31 set. */
#define NBD_REP_ACK                 1
#define NBD_REP_SERVER              2
#define NBD_REP_INFO                3
#define NBD_REP_META_CONTEXT        4
#define NBD_REP_IS_ERR(t)           (((t) & 0x80000000u) != 0)

/* NBD_REP_INFO types. */
#define NBD_INFO_EXPORT             0
#define NBD_INFO_NAME               1
#define NBD_INFO_DESCRIPTION        2
#define NBD_INFO_BLOCK_SIZE         3

/* Transmission magics. */
#define NBD_REQUEST_MAGIC           0x25609513u
#define NBD_EXTENDED_REQUEST_MAGIC  0x21e41c71u
#define NBD_SIMPLE_REPLY_MAGIC      0x67446698u
#define NBD_STRUCTURED_REPLY_MAGIC  0x668e33efu
#define NBD_EXTENDED_REPLY_MAGIC    0x6e8a278cu

/* Commands. */
#define NBD_CMD_READ                0
#define NBD_CMD_WRITE               1
#define NBD_CMD_DISC                2
#define NBD_CMD_FLUSH               3
#define NBD_CMD_TRIM                4
#define NBD_CMD_CACHE               5
#define NBD_CMD_WRITE_ZEROES        6
#define NBD_CMD_BLOCK_STATUS        7

/* Command flags. */
#define NBD_CMD_FLAG_PAYLOAD_LEN    (1u << 5)

/* Structured reply chunks. */
#define NBD_REPLY_FLAG_DONE         (1u << 0)
#define NBD_REPLY_TYPE_NONE         0
#define NBD_REPLY_TYPE_OFFSET_DATA  1
#define NBD_REPLY_TYPE_OFFSET_HOLE  2
#define NBD_REPLY_TYPE_BLOCK_STATUS 5
#define NBD_REPLY_TYPE_BLOCK_STATUS_EXT 6
#define NBD_REPLY_TYPE_IS_ERR(t)    (((t) & 0x8000u) != 0)
#define NBD_REPLY_TYPE_ERROR        0x8001u
#define NBD_REPLY_TYPE_ERROR_OFFSET 0x8002u

/* Error values. */
#define NBD_EPERM                   1

/* Sizes of the fixed parts. */
#define NBD_OLDSTYLE_ZEROES         124
#define NBD_EXPORT_NAME_ZEROES      124
#define NBD_REQUEST_SIZE            28
#define NBD_EXTENDED_REQUEST_SIZE   32
#define NBD_SIMPLE_REPLY_SIZE       16
#define NBD_STRUCTURED_REPLY_SIZE   20
#define NBD_EXTENDED_REPLY_SIZE     32

#endif
