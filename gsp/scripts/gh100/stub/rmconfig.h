/* empty stand-in for OpenRM's generated rmconfig.h */
