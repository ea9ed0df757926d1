#ifndef GALACTIC_VERSION_H
#define GALACTIC_VERSION_H
/* The release version every daemon prints for --version; the chart's
 * appVersion and the image tags follow it (tests/images/test_images.sh). */
#define GALACTIC_VERSION "0.1.0"
#endif
