/* version.h - the one place the toolkit's version is written. */
#ifndef DTRAIN_VERSION_H
#define DTRAIN_VERSION_H

#define DTRAIN_VERSION "0.1.0"

#endif
